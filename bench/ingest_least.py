"""The least any ingest of network/ port-counter CSV can do, against the plain polars read (bench/ingest_ratio.py).

    python bench/ingest_least.py --source DIR [--workdir /tmp/goodput-least]

For the simulator's network/ files (time,host,metric,value, one header line, no blank line): the SHA-256 of
each file's bytes, one pl.read_csv with the stored types (the time parsed, the value a float), the line
numbers and the file's path added, every row written to DuckDB's telemetry table in one transaction. No
check, no host or label rules, no rejects: what goodput does on top of this only costs more. Printed: its
CPU seconds, the plain read's (polars_read) and their ratio, the best one an ingest of these files can reach
(issue 35 asked for 0.25: bench/results-ingest-ratio.txt).
"""
from __future__ import annotations

import argparse
import hashlib
import sys
import time
from pathlib import Path

import polars as pl

REPO = Path(__file__).resolve().parents[1]
SCHEMA = {"time": pl.Utf8, "host": pl.Utf8, "metric": pl.Utf8, "value": pl.Float64}
BATCH_ROWS = 500_000  # rows handed to DuckDB at a time, as goodput's batches are


def least_ingest(paths: list[Path], db: Path) -> float:
    """CPU seconds of the least ingest of ``paths`` into a fresh warehouse at ``db``."""
    sys.path.insert(0, str(REPO))
    from analysis import warehouse

    db.unlink(missing_ok=True)
    con = warehouse.connect(db)
    start = time.process_time()
    con.execute("BEGIN TRANSACTION")
    frames: list[pl.DataFrame] = []
    for i, path in enumerate(paths):
        data = path.read_bytes()
        hashlib.sha256(data).hexdigest()
        frames.append(pl.read_csv(data, schema=SCHEMA).select(
            time=pl.col("time").str.to_datetime("%Y-%m-%dT%H:%M:%SZ", time_unit="us"), host="host", metric="metric",
            gpu=pl.lit(None, pl.Int32), value="value", file=pl.lit(str(path)),
            line_no=pl.int_range(2, pl.len() + 2, dtype=pl.Int64)))
        if sum(f.height for f in frames) > BATCH_ROWS or i == len(paths) - 1:
            staged = con.from_arrow(pl.concat(frames).to_arrow(compat_level=pl.CompatLevel.newest()))
            staged.query("staged", "INSERT INTO telemetry BY NAME SELECT * FROM staged")
            frames = []
    con.execute("COMMIT")
    took = time.process_time() - start
    con.close()
    db.unlink(missing_ok=True)
    return took


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--source", type=Path, required=True, help="a source directory with a network/ folder")
    ap.add_argument("--workdir", type=Path, default=Path("/tmp/goodput-least"))
    args = ap.parse_args()
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from ingest_ratio import _warm, polars_read

    paths = sorted(p for p in (args.source / "network").iterdir() if p.name.endswith(".csv"))
    _warm(paths)
    start = time.process_time()
    for p in paths:
        polars_read(p, "network")
    plain = time.process_time() - start
    args.workdir.mkdir(parents=True, exist_ok=True)
    least = least_ingest(paths, args.workdir / "least.duckdb")
    print(f"network: {len(paths)} files, plain polars read {plain:.2f} CPU s, least ingest {least:.2f} CPU s, "
          f"best ratio {plain / least:.2f}")


if __name__ == "__main__":
    main()
