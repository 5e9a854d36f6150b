"""A year of a 2,000-node cluster with every source: fresh run, no-change rerun, one-day increment, ingest rate.

    python bench/scale.py [--nodes 2000] [--days 330] [--workdir /tmp/goodput-scale] [--source DIR]

Simulates rsc1 for DAYS + 1 days (or takes --source, a simulator output) with every source the simulator
writes: sacct, slurm events, kernel, switch, health, benchmarks, telemetry, port counters, job logs,
tickets, topology. It hard-links every file except the last day's into base/ (the last day's: files named
by that date, and the job logs and telemetry of jobs that ended that day) and times each `goodput run` in
its own child process (wall seconds, CPU seconds, that child's peak RSS, and its slowest steps):
  1. a fresh run on base/ (a new warehouse; the files read once before, so all runs find them in the page cache);
  2. the same run again with nothing new;
  3. the last day's files linked in, then a run (the one-day nightly increment).
Then, per source folder, goodput's ingest of base/ into a new warehouse against
a plain polars read of the same files (bench/ingest_ratio.py, which also runs on
its own): the throughput ratio polars-seconds / goodput-seconds.
"""
from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
from analysis.simulate.increment import add_held_out, data_files, hold_out_last_day  # noqa: E402

GOODPUT = [sys.executable, "-m", "pipelines.cli"]
# the same command, with every step's time logged (the runner tells only the steps over SLOW_S)
EVERY_STEP = [sys.executable, "-c", "import sys; import pipelines.runner as r; r.SLOW_S = 0.0; "
              "sys.argv[0] = 'goodput'; from pipelines.cli.app import main; main()"]


def child(cmd: list[str], log: Path) -> tuple[float, float, float, int]:
    """Wall seconds, CPU seconds (user + system), peak RSS (MB) and exit status of one child process."""
    t0 = time.perf_counter()
    with log.open("w") as out:
        proc = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT, cwd=REPO)
        _, status, usage = os.wait4(proc.pid, 0)
    cpu = usage.ru_utime + usage.ru_stime
    return time.perf_counter() - t0, cpu, usage.ru_maxrss / 1024, os.waitstatus_to_exitcode(status)


SLOW_STEP = re.compile(r"^\s+(\S+) (done|FAILED) after ([\d.]+) s")  # the runner's progress log (steps >= 2 s)


def run(source: Path, db: Path, out: Path, log: Path, every_step: bool = False) -> tuple[float, float, float]:
    seconds, cpu, rss, code = child([*(EVERY_STEP if every_step else GOODPUT), "run", "--source", str(source),
                                     "--db", str(db), "--out", str(out)],
                                    log)
    text = log.read_text().splitlines()
    steps = sorted(((float(m.group(3)), m.group(1)) for line in text if (m := SLOW_STEP.match(line))), reverse=True)
    print(f"    exit {code}; {text[-1] if text else ''}", flush=True)
    if steps:
        print("    slowest steps: " + ", ".join(f"{name} {s:.1f} s" for s, name in steps[:8]), flush=True)
    if every_step:
        print(f"    every step: {sum(s for s, _ in steps):.1f} s: "
              + ", ".join(f"{name} {s:.1f}" for s, name in steps if s >= 0.3), flush=True)
    return seconds, cpu, rss


def throughput(base: Path, workdir: Path) -> None:
    """Per source folder, goodput's ingest against a plain polars read (bench/ingest_ratio.py)."""
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    import ingest_ratio

    ingest_ratio.throughput(base, workdir)


def keep(db: Path, out: Path, kept: Path) -> None:
    """The state before the increment (warehouse, saved models, outputs), so that --only-increment can replay it."""
    shutil.rmtree(kept, ignore_errors=True)
    kept.mkdir()
    shutil.copy2(db, kept / db.name)
    for folder in (db.parent / "models", out):
        if folder.exists():
            shutil.copytree(folder, kept / folder.name)


def again(kept: Path, db: Path, out: Path, src: Path, base: Path, held: list, work: Path) -> None:
    """The one-day increment alone, from the state keep() saved: for timing a change to the nightly's steps."""
    if not (kept / db.name).exists():
        sys.exit(f"nothing kept in {kept}: run the bench once without --only-increment")
    shutil.copy2(kept / db.name, db)
    for name, target in (("models", db.parent / "models"), (out.name, out)):
        shutil.rmtree(target, ignore_errors=True)
        if (kept / name).exists():
            shutil.copytree(kept / name, target)
    add_held_out(src, base, held)
    print("3. one-day increment (from the kept warehouse)", flush=True)
    seconds, cpu, rss = run(base, db, out, work / "increment.log", every_step=True)
    print(f"one-day increment  {seconds:8.1f} s wall {cpu:8.1f} CPU s {rss:12,.0f} MB peak RSS", flush=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--nodes", type=int, default=2000)
    ap.add_argument("--days", type=int, default=330)
    ap.add_argument("--workdir", type=Path, default=Path("/tmp/goodput-scale"))
    ap.add_argument("--source", type=Path, help="an existing simulator output (DAYS + 1 days) instead of simulating")
    ap.add_argument("--skip-throughput", action="store_true")
    ap.add_argument("--only-throughput", action="store_true", help="skip the three runs")
    ap.add_argument("--only-increment", action="store_true",
                    help="only the one-day increment again, on the copy of the warehouse an earlier run kept")
    args = ap.parse_args()
    work = args.workdir
    work.mkdir(parents=True, exist_ok=True)
    src = args.source or work / "sim"
    if not src.exists():
        print(f"simulating rsc1, {args.nodes} nodes x {args.days + 1} days into {src} ...", flush=True)
        seconds, _, rss, code = child([*GOODPUT, "simulate", "--out", str(src), "--preset", "rsc1", "--seed", "1",
                                       "--nodes", str(args.nodes), "--days", str(args.days + 1)], work / "simulate.log")
        if code:
            sys.exit(f"simulate failed: see {work / 'simulate.log'}")
        print(f"  simulate {seconds:.1f} s, peak RSS {rss:,.0f} MB", flush=True)
    base = work / "base"
    shutil.rmtree(base, ignore_errors=True)
    held = hold_out_last_day(src, base)
    size = sum(p.stat().st_size for p in data_files(base)) / 1e6
    print(f"base: {len(data_files(base))} files, {size:,.1f} MB; held out for the increment: {len(held)} files", flush=True)
    db, out = work / "warehouse.duckdb", work / "out"
    kept = work / "before-increment"  # the warehouse, models and outputs after the rerun, for --only-increment
    if args.only_increment:
        again(kept, db, out, src, base, held, work)
        return
    db.unlink(missing_ok=True)
    shutil.rmtree(out, ignore_errors=True)
    shutil.rmtree(db.parent / "models", ignore_errors=True)  # a fresh run trains its models: none saved from before
    results = {}
    if args.only_throughput:
        throughput(base, work)
        return
    # the files read once beforehand, so that every run finds them in the page cache: a cold read of 3 GB made
    # the fresh run's ingest steps ~30% slower in one session than the last with the same code (likely; not proven)
    warm = time.perf_counter()
    for p in data_files(base):
        with open(p, "rb") as f:
            while f.read(1 << 24):
                pass
    print(f"1. fresh run (the source read once beforehand in {time.perf_counter() - warm:.1f} s)", flush=True)
    results["fresh run"] = run(base, db, out, work / "fresh.log")
    print("2. rerun, nothing new", flush=True)
    results["no-change rerun"] = run(base, db, out, work / "rerun.log")
    keep(db, out, kept)
    add_held_out(src, base, held)
    print("3. one-day increment", flush=True)
    results["one-day increment"] = run(base, db, out, work / "increment.log")
    print(f"\n{args.nodes} nodes x {args.days} days, every source")
    print(f"{'step':18} {'wall s':>8} {'CPU s':>8} {'peak RSS MB':>12}")
    for name, (seconds, cpu, rss) in results.items():
        print(f"{name:18} {seconds:8.1f} {cpu:8.1f} {rss:12,.0f}", flush=True)
    if not args.skip_throughput:
        throughput(base, work)


if __name__ == "__main__":
    main()
