"""Simulator scale: time (wall and CPU) and peak memory for a preset, and the shares it produced.

    python bench/simulate.py [--preset rsc1] [--nodes 2000] [--days 30] [--seed 1] [--out /tmp/goodput-sim]

The simulation runs in a child process so its CPU time and peak RSS are measured alone (on a shared machine
CPU seconds compare runs better than wall seconds). Figures: bench/results-simulate.txt.
"""
from __future__ import annotations

import argparse
import json
import resource
import shutil
import subprocess
import sys
import time
from pathlib import Path

import polars as pl

REPO = Path(__file__).resolve().parents[1]


def shares(out: Path) -> dict:
    t = pl.read_csv(out / "truth" / "job_instances.csv", infer_schema_length=0).with_columns(
        pl.col("gpus").cast(pl.Int64), pl.col("start").str.to_datetime(strict=False), pl.col("end").str.to_datetime(strict=False))
    t = t.with_columns(gpu_h=(pl.col("end") - pl.col("start")).dt.total_seconds().fill_null(0) / 3600 * pl.col("gpus"))
    hardware = t.filter(~pl.col("cause").is_in(["none", "user", "oom", "preempted", "maintenance", "nccl_timeout"]))
    return {
        "instances": t.height,
        "one_gpu_share": round(float((t["gpus"] == 1).mean()), 4),
        "sub_node_share": round(float((t["gpus"] < 8).mean()), 4),
        "gpu_time_share_256plus": round(float(t.filter(pl.col("gpus") >= 256)["gpu_h"].sum() / t["gpu_h"].sum()), 4),
        "hardware_failed_instance_share": round(hardware.height / t.height, 5),
        "hardware_gpu_time_share": round(float(hardware["gpu_h"].sum() / t["gpu_h"].sum()), 4),
        "states": {k: round(v / t.height, 4) for k, v in t.group_by("state").len().iter_rows()},
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--preset", default="rsc1")
    ap.add_argument("--nodes", type=int, default=2000)
    ap.add_argument("--days", type=int, default=30)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--out", type=Path, default=Path("/tmp/goodput-sim"))
    args = ap.parse_args()
    shutil.rmtree(args.out, ignore_errors=True)
    t0 = time.perf_counter()
    subprocess.run([sys.executable, "-m", "pipelines", "simulate", "--out", str(args.out), "--preset", args.preset,
                    "--nodes", str(args.nodes), "--days", str(args.days), "--seed", str(args.seed)], check=True, cwd=REPO)
    wall = time.perf_counter() - t0
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    peak_mb, cpu = usage.ru_maxrss / 1024, usage.ru_utime + usage.ru_stime
    size_mb = sum(p.stat().st_size for p in args.out.rglob("*") if p.is_file()) / 1e6
    print(json.dumps({"preset": args.preset, "nodes": args.nodes, "days": args.days, "seed": args.seed,
                      "wall_s": round(wall, 1), "cpu_s": round(cpu, 1),
                      "peak_rss_mb": round(peak_mb), "output_mb": round(size_mb, 1), **shares(args.out)}, indent=1))


if __name__ == "__main__":
    main()
