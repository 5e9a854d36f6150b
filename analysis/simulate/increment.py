"""A simulator output split as a nightly sees it: every file but the last day's, then the last day's.

The last day's files are those named by that date (the daily dumps: sacct, kernel, switch, health, port
counters) and the per-job files (job logs, telemetry) of jobs with an instance that ended that day or
has not ended. Used by bench/scale.py and the test that a one-day increment equals a fresh run."""
from __future__ import annotations

import os
import re
from pathlib import Path

import polars as pl

DATED = re.compile(r"(\d{4}-\d{2}-\d{2})")
JOB_FILE = re.compile(r"^(?:slurm|job)-(\d+(?:_\d+)?)\.(?:out|parquet)$")  # joblogs/ and telemetry/ per job


def data_files(src: Path) -> list[Path]:
    return sorted(p for p in src.rglob("*") if p.is_file() and "truth" not in p.relative_to(src).parts)


def jobs_ending_on(src: Path, day: str) -> set[str]:
    """Job ids with an instance that ended on ``day`` or later, or has not ended (the simulator's truth)."""
    inst = pl.read_csv(src / "truth" / "job_instances.csv", columns=["job_id", "end"], infer_schema_length=0)
    last = inst.group_by("job_id").agg(pl.col("end").str.slice(0, 10).max().alias("day"), pl.col("end").null_count())
    return set(last.filter((pl.col("day") >= day) | (pl.col("end") > 0))["job_id"].to_list())


def hold_out_last_day(src: Path, base: Path) -> list[Path]:
    """Hard-link every file of ``src`` but the last day's into ``base``; returns the held-out files
    (relative to ``src``), for add_held_out."""
    files = data_files(src)
    last = max(m.group(1) for p in files if (m := DATED.search(p.name)))
    ending = jobs_ending_on(src, last)
    held = []
    for p in files:
        rel = p.relative_to(src)
        job = JOB_FILE.match(p.name)
        if last in p.name or (job and job.group(1) in ending):
            held.append(rel)
            continue
        (base / rel).parent.mkdir(parents=True, exist_ok=True)
        os.link(p, base / rel)
    return held


def add_held_out(src: Path, base: Path, held: list[Path]) -> None:
    for rel in held:
        (base / rel).parent.mkdir(parents=True, exist_ok=True)
        os.link(src / rel, base / rel)
