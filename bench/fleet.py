"""Two clusters one after the other against side by side (`goodput run --fleet --jobs 1` and `--jobs 2`).

Each cluster's run is independent (its own process and warehouse), so on 2 cores the parallel run should take
well under the serial one's wall time (the target: under 0.7x). Every source is simulated (`goodput simulate
--fleet`); each mode runs into fresh folders, so both are fresh runs of the same data.

    python bench/fleet.py [--fleet rsc1:200,rsc2:200] [--days 30] [--workdir DIR]

Prints wall seconds, CPU seconds (user + system of the run and its children) and the largest child's peak RSS.
"""
from __future__ import annotations

import argparse
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def goodput(*args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    env.pop("DAGSTER_HOME", None)
    return subprocess.run([sys.executable, "-m", "pipelines.cli", *args], env=env, capture_output=True, text=True)


def timed_run(src: Path, work: Path, jobs: int) -> dict:
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    done = goodput("run", "--fleet", str(src), "--db-dir", str(work / "db"), "--out", str(work / "out"),
                   "--jobs", str(jobs), "-q")
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode not in (0, 3):
        sys.exit(f"run --jobs {jobs} failed ({done.returncode}):\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}")
    status = [line for line in done.stdout.splitlines() if line.startswith(("Fleet:", "FLEET:"))]
    return {"wall": wall, "cpu": after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime,
            "rss_mb": after.ru_maxrss / 1024, "exit": done.returncode, "status": "; ".join(status)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--fleet", default="rsc1:200,rsc2:200")
    parser.add_argument("--days", type=int, default=30)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--workdir", type=Path, default=None)
    args = parser.parse_args()
    work = args.workdir or Path(tempfile.mkdtemp(prefix="goodput-fleet-"))
    src = work / "src"
    if not (src / "fleet.json").is_file():
        shutil.rmtree(src, ignore_errors=True)
        made = goodput("simulate", "--fleet", args.fleet, "--days", str(args.days), "--seed", str(args.seed),
                       "--out", str(src))
        if made.returncode:
            sys.exit(made.stderr)
    size = sum(f.stat().st_size for f in src.rglob("*") if f.is_file()) / 1e6
    print(f"fleet {args.fleet} x {args.days} days: {size:,.0f} MB of sources in {src}; {os.cpu_count()} cores, "
          f"load {os.getloadavg()[0]:.1f}")
    results = {}
    for jobs in (1, 2):  # serial first: a fresh run into fresh folders each time
        shutil.rmtree(work / f"jobs{jobs}", ignore_errors=True)
        results[jobs] = r = timed_run(src, work / f"jobs{jobs}", jobs)
        print(f"--jobs {jobs}: {r['wall']:7.1f} s wall  {r['cpu']:7.1f} CPU-s  peak RSS {r['rss_mb']:6,.0f} MB  "
              f"exit {r['exit']}  ({r['status']})", flush=True)
    print(f"parallel / serial wall: {results[2]['wall'] / results[1]['wall']:.2f} (target < 0.70); load after "
          f"{os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
