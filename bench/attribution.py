"""Attribution speed at scale: classify events, attribute failures, chain runs, group incidents.

    python bench/attribution.py [--nodes 2000] [--days 30] [--workdir /tmp/goodput-attr]

Simulates the rsc1 preset (unless the source already exists), ingests it, then
times each attribution step (all DuckDB set operations: hash joins on kind,
range joins on host and time, ASOF joins for drains and tickets).
"""
from __future__ import annotations

import argparse
import resource
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from analysis import warehouse  # noqa: E402
from analysis.derive import attribution
from analysis.derive.jobs import build_jobs, map_switch_ports  # noqa: E402
from analysis.derive.taxonomy import load  # noqa: E402
from analysis.ingest.engine import ingest_directory  # noqa: E402
from analysis.simulate.config import preset  # noqa: E402
from analysis.simulate.run import simulate  # noqa: E402


def timed(label: str, fn):
    t0 = time.perf_counter()
    out = fn()
    print(f"{label:22} {time.perf_counter() - t0:7.2f} s   {out}", flush=True)
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--nodes", type=int, default=2000)
    ap.add_argument("--days", type=int, default=30)
    ap.add_argument("--workdir", type=Path, default=Path("/tmp/goodput-attr"))
    args = ap.parse_args()
    src, db = args.workdir / f"rsc1-{args.nodes}x{args.days}", args.workdir / f"rsc1-{args.nodes}x{args.days}.duckdb"
    if not src.exists():
        timed("simulate", lambda: simulate(preset("rsc1", nodes=args.nodes, days=args.days), src)["job_instances"])
    fresh = not db.exists()
    con = warehouse.connect(db)
    if fresh:
        timed("ingest", lambda: sum(o.rows for o in ingest_directory(con, src).outcomes))
        timed("jobs", lambda: build_jobs(con))
        timed("map switch ports", lambda: map_switch_ports(con))
    tax = load()
    print(f"events {con.execute('SELECT count(*) FROM node_events').fetchall()[0][0]:,}, "
          f"job instances {con.execute('SELECT count(*) FROM jobs').fetchall()[0][0]:,}, rules {tax.rules.height}")
    t0 = time.perf_counter()
    timed("classify events", lambda: attribution.classify_events(con, tax))
    timed("attribute failures", lambda: attribution.attribute_failures(con, tax))
    timed("job runs", lambda: attribution.build_job_runs(con))
    timed("node incidents", lambda: attribution.build_node_incidents(con))
    print(f"attribution total      {time.perf_counter() - t0:7.2f} s; peak RSS "
          f"{resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:,.0f} MB")
    con.close()


if __name__ == "__main__":
    main()
