"""Ingest memory and the unchanged check (issue 22).

    python bench/ingest_memory.py [--port-lines 2184000] [--tiny-files 5000] [--source DIR]
                                  [--workdir /tmp/goodput-bench-memory]

(1) A port-counter CSV of --port-lines lines in the simulator's network/ format (2,000 hosts x 91 days is
    2.18 M lines, 218 MB), ingested in a child process: its peak RSS and CPU time.
(2) --tiny-files one-line kernel logs ingested, then checked again unchanged: seconds per 1,000 files.
(3) With --source DIR (a `goodput simulate` output, or a site's logs; not written to): each source folder
    ingested in a child process of its own, in ingestion order, into one warehouse: peak RSS and time per folder.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from datetime import datetime
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
from analysis import warehouse  # noqa: E402
from analysis.ingest.engine import ingest_directory  # noqa: E402
from analysis.sources import SOURCES  # noqa: E402
from tests.test_ingest_memory import write_port_counters  # noqa: E402

CHILD = """
import json, resource, sys, time
from pathlib import Path
from analysis import warehouse
from analysis.ingest.engine import ingest_directory
con = warehouse.connect(Path(sys.argv[2]))
sources = sys.argv[3:] or None
out = ingest_directory(con, Path(sys.argv[1]), sources=sources).outcomes
con.close()  # DuckDB's checkpoint counts too
usage = resource.getrusage(resource.RUSAGE_SELF)
print(json.dumps({"files": len(out), "rows": sum(o.rows for o in out), "errors": sum(o.status == "error" for o in out),
                  "cpu": usage.ru_utime + usage.ru_stime, "peak_gb": usage.ru_maxrss / 1024 / 1024}))
"""


def child(src: Path, db: Path, *sources: str) -> dict:
    t0 = time.perf_counter()
    run = subprocess.run([sys.executable, "-c", CHILD, str(src), str(db), *sources], cwd=REPO, capture_output=True,
                         text=True, env={**os.environ, "PYTHONPATH": str(REPO)})
    if run.returncode:
        raise SystemExit(run.stderr[-3000:])
    return {**json.loads(run.stdout.splitlines()[-1]), "wall": time.perf_counter() - t0}


def port_counters(workdir: Path, n_lines: int) -> None:
    src = workdir / f"network-{n_lines}"
    path = src / "network" / "ib-port-counters.csv"
    days = max(1, round(n_lines / (2000 * 4 * 3)))
    if not path.exists():
        write_port_counters(path, hosts=2000, days=days)
    db = workdir / "network.duckdb"
    db.unlink(missing_ok=True)
    r = child(src, db)
    print(f"port counters {path.stat().st_size / 1e6:6.0f} MB ({r['rows']:,} rows): peak RSS {r['peak_gb']:.2f} GB, "
          f"{r['cpu']:.1f} CPU-s, {r['wall']:.1f} s", flush=True)


def unchanged_check(workdir: Path, n_files: int) -> None:
    src = workdir / f"tiny-{n_files}"
    folder = src / "kernel"
    folder.mkdir(parents=True, exist_ok=True)
    past = datetime(2024, 3, 2).timestamp()  # before the reading by more than the racy-clean second
    for i in range(n_files):
        path = folder / f"gpu{i:05d}.log"
        if not path.exists():
            path.write_text(f"2024-03-01T10:00:00+00:00 gpu{i:05d} kernel: NVRM: Xid (PCI:0000:3b:00): 79, pid=1\n")
            os.utime(path, (past, past))
    db = workdir / "tiny.duckdb"
    db.unlink(missing_ok=True)
    con = warehouse.connect(db)
    t0 = time.perf_counter()
    ingest_directory(con, src)
    first = time.perf_counter() - t0
    t0 = time.perf_counter()
    again = ingest_directory(con, src)
    seconds = time.perf_counter() - t0
    assert {o.status for o in again.outcomes} == {"unchanged"}, "a file was read again"
    print(f"{n_files:,} tiny files: first ingest {first:.1f} s; unchanged rerun {seconds:.2f} s = "
          f"{seconds / n_files * 1000:.2f} s per 1,000 files", flush=True)


def per_source(workdir: Path, source_dir: Path) -> None:
    db = workdir / "per-source.duckdb"
    db.unlink(missing_ok=True)
    for source in SOURCES:
        if (source_dir / source).is_dir():
            r = child(source_dir, db, source)
            print(f"{source:13s} {r['files']:6,} files {r['rows']:11,} rows {r['errors']} errors | peak RSS "
                  f"{r['peak_gb']:5.2f} GB | {r['cpu']:7.1f} CPU-s {r['wall']:7.1f} s", flush=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--port-lines", type=int, default=2_184_000)
    ap.add_argument("--tiny-files", type=int, default=5_000)
    ap.add_argument("--source", type=Path, help="also measure each source folder of this directory")
    ap.add_argument("--workdir", type=Path, default=Path("/tmp/goodput-bench-memory"))
    args = ap.parse_args()
    args.workdir.mkdir(parents=True, exist_ok=True)
    if args.port_lines:
        port_counters(args.workdir, args.port_lines)
    if args.tiny_files:
        unchanged_check(args.workdir, args.tiny_files)
    if args.source:
        per_source(args.workdir, args.source)


if __name__ == "__main__":
    main()
