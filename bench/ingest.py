"""Ingestion speed: goodput's sacct and kernel-log ingest against DuckDB's read_csv.

    python bench/ingest.py [--sacct-rows 1000000] [--kernel-lines 5000000] [--workdir /tmp/goodput-bench]

Writes a synthetic sacct dump (allocations + batch/extern/0 steps, every
column of docs/connect.md#slurm-accounting-required) and a journalctl-style kernel log with ~1% XID/AER/ECC lines, then
times: (1) DuckDB's read_csv scanning the same file into a table, as the floor
for reading that many bytes, and (2) goodput's full ingest of the file
(read, parse, validate, write to the warehouse in one transaction).
"""
from __future__ import annotations

import argparse
import resource
import sys
import time
from pathlib import Path

import duckdb
import numpy as np
import polars as pl

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from analysis import warehouse  # noqa: E402
from analysis.ingest.engine import ingest_directory  # noqa: E402
from analysis.ingest.parsers.sacct import DEFAULT_COLUMNS  # noqa: E402

STATES = np.array(["COMPLETED"] * 60 + ["FAILED"] * 24 + ["PREEMPTED"] * 10 + ["CANCELLED by 1234"] * 4
                  + ["NODE_FAIL", "TIMEOUT"])


def write_sacct(path: Path, n_rows: int, seed: int = 1) -> None:
    rng = np.random.default_rng(seed)
    n_jobs = n_rows // 4
    base = 1_000_000 + np.arange(n_jobs)
    start = np.datetime64("2024-03-01T00:00:00") + rng.integers(0, 30 * 86400, n_jobs).astype("timedelta64[s]")
    dur = rng.integers(60, 3 * 86400, n_jobs)
    end = start + dur.astype("timedelta64[s]")
    nodes = rng.integers(1, 9, n_jobs)
    first = rng.integers(1, 900, n_jobs)
    jobs = pl.DataFrame({"id": base.astype(str), "start": start.astype(str), "end": end.astype(str),
                         "elapsed": [f"{d // 86400}-{d % 86400 // 3600:02d}:{d % 3600 // 60:02d}:{d % 60:02d}" for d in dur],
                         "nn": nodes, "first": first, "state": rng.choice(STATES, n_jobs)})
    jobs = jobs.with_columns(
        nodelist=pl.format("gpu[{}-{}]", pl.col("first").cast(pl.Utf8).str.zfill(4),
                           (pl.col("first") + pl.col("nn") - 1).cast(pl.Utf8).str.zfill(4)),
        tres=pl.format("billing={},cpu={},gres/gpu={},mem=512G,node={}", pl.col("nn") * 8, pl.col("nn") * 64,
                       pl.col("nn") * 8, pl.col("nn")))
    suffixes = ["", ".batch", ".extern", ".0"]
    parts = []
    for s in suffixes:
        parts.append(jobs.select(pl.concat_str([
            pl.col("id") + s, pl.col("id") + s, pl.lit("train" if s == "" else s.strip(".")), pl.lit("user1"),
            pl.lit("acct"), pl.lit("gpu"), pl.lit("normal"), pl.lit("1000"), pl.col("state"), pl.lit("0:0"),
            pl.lit("None"), pl.col("start"), pl.col("start"), pl.col("start"), pl.col("end"), pl.col("elapsed"),
            pl.col("nn").cast(pl.Utf8), pl.col("tres"), pl.col("nodelist"), pl.lit("0"),
            pl.lit("sbatch train.sh" if s == "" else "")], separator="|").alias("line"),
            pl.col("id"), pl.lit(len(parts)).alias("k")))
    lines = pl.concat(parts).sort("id", "k")["line"]
    path.write_text("|".join(DEFAULT_COLUMNS) + "\n" + "\n".join(lines.to_list()) + "\n")


KERNEL_MESSAGES = [
    "NVRM: Xid (PCI:0000:b3:00): 79, pid=48213, name=python, GPU has fallen off the bus.",
    "pcieport 0000:b0:01.0: AER: Corrected error received: 0000:b3:00.0",
    "EDAC MC0: 1 CE memory read error on CPU_SrcID#0_Ha#0_Chan#0_DIMM#0 (channel:0 slot:0 page:0x5353)",
] + [f"audit: type=1400 audit({i}.123:42): apparmor=\"DENIED\" operation=\"open\" profile=\"snap\" name=\"/x/{i}\""
     for i in range(97)]


def write_kernel(path: Path, n_lines: int, seed: int = 2) -> None:
    rng = np.random.default_rng(seed)
    t = np.datetime64("2024-03-01T00:00:00") + np.sort(rng.integers(0, 30 * 86400, n_lines)).astype("timedelta64[s]")
    frame = pl.DataFrame({"t": t.astype(str), "m": rng.choice(np.array(KERNEL_MESSAGES), n_lines)})
    lines = frame.select(pl.col("t") + "+0000 gpu0001 kernel: " + pl.col("m"))["t"]
    path.write_text("\n".join(lines.to_list()) + "\n")


def timed(fn):
    t0 = time.perf_counter()
    out = fn()
    return time.perf_counter() - t0, out


def duckdb_scan(path: Path, delim: str) -> float:
    con = duckdb.connect()
    seconds, _ = timed(lambda: con.execute(
        f"CREATE TABLE t AS SELECT * FROM read_csv('{path}', delim='{delim}', header=false, quote='', escape='',"
        " all_varchar=true, null_padding=true, strict_mode=false)"))
    con.close()
    return seconds


def bench(name: str, source: str, filename: str, writer, n: int, workdir: Path, delim: str) -> None:
    src = workdir / f"{name}-src"
    (src / source).mkdir(parents=True, exist_ok=True)
    path = src / source / filename
    if not path.exists():
        print(f"writing {n:,} {name} lines to {path} ...", flush=True)
        writer(path, n)
    size_mb = path.stat().st_size / 1e6
    scan = duckdb_scan(path, delim)
    db = workdir / f"{name}.duckdb"
    db.unlink(missing_ok=True)
    con = warehouse.connect(db)
    seconds, summary = timed(lambda: ingest_directory(con, src))
    con.close()
    rows = sum(o.rows for o in summary.outcomes)
    print(f"{name:7} {n:>10,} lines {size_mb:8.1f} MB | duckdb read_csv {scan:6.2f} s ({n / scan / 1e6:5.2f} M lines/s)"
          f" | goodput ingest {seconds:6.2f} s ({n / seconds / 1e6:5.2f} M lines/s, {rows:,} rows)", flush=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sacct-rows", type=int, default=1_000_000)
    ap.add_argument("--kernel-lines", type=int, default=5_000_000)
    ap.add_argument("--workdir", type=Path, default=Path("/tmp/goodput-bench"))
    args = ap.parse_args()
    args.workdir.mkdir(parents=True, exist_ok=True)
    bench("sacct", "slurm", "sacct.txt", write_sacct, args.sacct_rows, args.workdir, "|")
    bench("kernel", "kernel", "gpu0001.log", write_kernel, args.kernel_lines, args.workdir, "\\x01")
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"peak RSS {peak:,.0f} MB")


if __name__ == "__main__":
    main()
