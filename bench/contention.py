"""`goodput demo` alone, then beside CPU-bound processes: does any step stall on thread oversubscription?

Torch's OpenMP threads and OpenBLAS's threads spin while they wait; when another process holds a core they
spin against it and a two-minute step takes twenty. goodput runs its models on one thread
($GOODPUT_TORCH_THREADS) and bounds the native pools (analysis.threads), so the demo beside a busy process
should cost about the same CPU time and well under twice the wall time.

    python bench/contention.py [--busy N] [--threads T]

Prints wall seconds, CPU seconds (user + system of the demo and its children) and peak RSS, for each run.
"""
from __future__ import annotations

import argparse
import multiprocessing as mp
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def spin(stop) -> None:
    x = 0
    while not stop.is_set():
        for _ in range(100_000):
            x = (x * 1_103_515_245 + 12_345) & 0xFFFFFFFF


def run_demo(work: Path, threads: str | None) -> dict:
    env = dict(os.environ)
    if threads:
        env["GOODPUT_TORCH_THREADS"] = threads
    env.pop("DAGSTER_HOME", None)
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "pipelines", "demo", "-q", "--db", str(work / "demo.duckdb"),
                           "--out", str(work / "out")], cwd=REPO, env=env, capture_output=True, text=True)
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode not in (0, 3):
        sys.exit(f"goodput demo failed (exit {done.returncode}):\n{done.stdout[-2000:]}\n{done.stderr[-2000:]}")
    return {"wall_s": wall, "cpu_s": (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime),
            "peak_rss_mb": after.ru_maxrss / 1024, "exit": done.returncode}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--busy", type=int, default=1, help="CPU-bound processes beside the second run [1]")
    parser.add_argument("--threads", default=None, help="GOODPUT_TORCH_THREADS for both runs [the default]")
    args = parser.parse_args()
    print(f"cores: {os.cpu_count()}, busy processes beside the second run: {args.busy}, "
          f"GOODPUT_TORCH_THREADS: {args.threads or os.environ.get('GOODPUT_TORCH_THREADS', 'default')}", flush=True)
    results = {}
    with tempfile.TemporaryDirectory() as tmp:
        results["alone"] = run_demo(Path(tmp) / "alone", args.threads)
        print(_line("alone", results["alone"]), flush=True)
        stop = mp.Event()
        busy = [mp.Process(target=spin, args=(stop,), daemon=True) for _ in range(args.busy)]
        for p in busy:
            p.start()
        try:
            results["busy"] = run_demo(Path(tmp) / "busy", args.threads)
        finally:
            stop.set()
            for p in busy:
                p.join(timeout=5)
        print(_line(f"beside {args.busy} busy", results["busy"]), flush=True)
    a, b = results["alone"], results["busy"]
    print(f"ratio beside/alone: wall {b['wall_s'] / a['wall_s']:.2f}x, CPU {b['cpu_s'] / a['cpu_s']:.2f}x")


def _line(label: str, r: dict) -> str:
    return (f"{label:18} wall {r['wall_s']:7.1f} s   CPU {r['cpu_s']:7.1f} s   peak RSS {r['peak_rss_mb']:7,.0f} MB"
            f"   exit {r['exit']}")


if __name__ == "__main__":
    main()
