"""Ingest throughput per source: goodput's ingest against a plain polars read of the same files.

    python bench/ingest_ratio.py --source DIR [--only kernel,joblogs] [--workdir /tmp/goodput-ratio]

For each source folder of DIR (in ingestion order, so switch events see the
topology), side by side in this one process:
  polars   the plainest polars read that fits each file (polars_read): columns for
           sacct dumps and CSV, records for JSONL, Parquet, lines for text logs;
  goodput  ingest_directory(sources=[source]) into a fresh warehouse: discover, hash,
           read, parse, account, write every row and reject to DuckDB, commit.
Every file is read once beforehand, so both find it in the page cache. Wall and
CPU seconds (process CPU, all threads) are printed, and the ratio polars/goodput
of each: the issue's target is >= 0.5. The load average is printed with the
table: on a busy machine compare the CPU columns.
"""
from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

import polars as pl

REPO = Path(__file__).resolve().parents[1]


def polars_read(path: Path, source: str) -> int:
    """Rows of the plainest polars read that fits the file: columns for sacct
    dumps and CSV, records for JSONL, lines for text logs (a malformed line
    makes polars fail the whole file: then it is read as lines)."""
    name = path.name.removesuffix(".gz")
    try:
        if source == "slurm":
            return pl.read_csv(path, separator="|", quote_char=None, infer_schema_length=0,
                               truncate_ragged_lines=True).height
        if name.endswith(".parquet"):
            return pl.read_parquet(path).height
        if name.endswith(".jsonl") or name.endswith(".ndjson"):
            return pl.read_ndjson(path, infer_schema_length=None).height
        if name.endswith(".csv"):
            return pl.read_csv(path, infer_schema_length=0).height
    except pl.exceptions.PolarsError:
        pass
    # a text log: lines as one string column (no quoting, no splitting)
    return pl.read_csv(path, has_header=False, separator="\x1f", quote_char=None, new_columns=["line"],
                       schema_overrides={"line": pl.String}, truncate_ragged_lines=True).height


def _clock() -> tuple[float, float]:
    return time.perf_counter(), time.process_time()


def _since(start: tuple[float, float]) -> tuple[float, float]:
    wall, cpu = _clock()
    return wall - start[0], cpu - start[1]


def _warm(paths: list[Path]) -> None:
    for p in paths:
        with open(p, "rb") as f:
            while f.read(1 << 24):
                pass


def throughput(base: Path, workdir: Path, only: set[str] | None = None) -> list[dict]:
    """Per source: files, MB, polars and goodput wall/CPU seconds; printed as a table as it goes."""
    sys.path.insert(0, str(REPO))
    from analysis import warehouse
    from analysis.ingest import SOURCES, discover, ingest_directory
    from analysis.options import load_options

    by_source: dict[str, list[Path]] = {}
    for path, source in discover(base):
        if source is not None:
            by_source.setdefault(source, []).append(path)
    workdir.mkdir(parents=True, exist_ok=True)
    db = workdir / "throughput.duckdb"
    db.unlink(missing_ok=True)
    con = warehouse.connect(db)
    options = load_options(base)
    print(f"load average {' '.join(f'{x:.2f}' for x in os.getloadavg())} on {os.cpu_count()} cores", flush=True)
    print(f"{'source':12} {'files':>6} {'MB':>8} {'polars s':>9} {'goodput s':>10} {'ratio':>6}"
          f" {'polars cpu':>11} {'goodput cpu':>12} {'cpu ratio':>9}", flush=True)
    rows = []
    for source in SOURCES:
        paths = by_source.get(source)
        if not paths or (only and source not in only):
            if source in ("topology",) and paths:  # later sources map hosts through it
                ingest_directory(con, base, options, sources=[source])
            continue
        mb = sum(p.stat().st_size for p in paths) / 1e6
        _warm(paths)
        start = _clock()
        for p in paths:
            polars_read(p, source)
        plain = _since(start)
        start = _clock()
        ingest_directory(con, base, options, sources=[source])
        ours = _since(start)
        row = {"source": source, "files": len(paths), "mb": mb, "polars_s": plain[0], "goodput_s": ours[0],
               "polars_cpu": plain[1], "goodput_cpu": ours[1]}
        rows.append(row)
        print(f"{source:12} {len(paths):6} {mb:8.1f} {plain[0]:9.2f} {ours[0]:10.2f} {plain[0] / ours[0]:6.2f}"
              f" {plain[1]:11.2f} {ours[1]:12.2f} {plain[1] / max(ours[1], 1e-9):9.2f}", flush=True)
    con.close()
    print(f"load average {' '.join(f'{x:.2f}' for x in os.getloadavg())}", flush=True)
    return rows


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--source", type=Path, required=True, help="a source directory (e.g. a simulator output)")
    ap.add_argument("--only", help="comma-separated source folders (default: all)")
    ap.add_argument("--workdir", type=Path, default=Path("/tmp/goodput-ratio"))
    args = ap.parse_args()
    throughput(args.source, args.workdir, set(args.only.split(",")) if args.only else None)


if __name__ == "__main__":
    main()
