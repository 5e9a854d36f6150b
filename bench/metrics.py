"""Reliability metrics at scale on a 30-day rsc1 cluster (2,000 nodes).

    python bench/metrics.py [--nodes 2000] [--days 30] [--workdir /tmp/goodput-attr]

Uses the warehouse bench/attribution.py leaves behind (runs it first if absent),
then times each metric step.
"""
from __future__ import annotations

import argparse
import resource
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
from analysis import warehouse  # noqa: E402
from analysis.derive import metrics


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--nodes", type=int, default=2000)
    ap.add_argument("--days", type=int, default=30)
    ap.add_argument("--workdir", type=Path, default=Path("/tmp/goodput-attr"))
    args = ap.parse_args()
    db = args.workdir / f"rsc1-{args.nodes}x{args.days}.duckdb"
    if not db.exists() or not _has(db, "job_runs"):
        subprocess.run([sys.executable, str(REPO / "bench" / "attribution.py"), "--nodes", str(args.nodes),
                        "--days", str(args.days), "--workdir", str(args.workdir)], check=True)
    con = warehouse.connect(db)
    cfg = metrics.MetricsConfig()
    total = 0.0
    for label, step in (("run ETTR + downtime", lambda: metrics.build_run_ettr(con, cfg)),
                        ("failure rates + MTTF", lambda: metrics.build_failure_rates(con)),
                        ("goodput + 2nd-order", lambda: metrics.build_goodput(con, cfg)),
                        ("P_deg", lambda: metrics.build_iteration_degradation(con))):
        t0 = time.perf_counter()
        out = step()
        dt = time.perf_counter() - t0
        total += dt
        print(f"{label:22} {dt:6.2f} s   {out}", flush=True)
    print(f"metrics total          {total:6.2f} s; peak RSS {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:,.0f} MB")
    con.close()


def _has(db: Path, table: str) -> bool:
    import duckdb

    con = duckdb.connect(str(db), read_only=True)
    try:
        return bool(con.execute("SELECT count(*) FROM information_schema.tables WHERE table_name = ?", [table]).fetchall()[0][0])
    finally:
        con.close()


if __name__ == "__main__":
    main()
