"""Ingest throughput per source: goodput's ingest against a plain polars read of the same files.

    python bench/ingest_ratio.py --source DIR [--only kernel,joblogs] [--against OTHER_CHECKOUT]
                                 [--workdir /tmp/goodput-ratio] [--floor]

For each source folder of DIR, in ingestion order, side by side:
  polars   the plainest polars read that fits each file (polars_read): columns for
           sacct dumps and CSV, records for JSONL, Parquet, lines for text logs;
  goodput  ingest_directory(sources=[source]) into a fresh warehouse (the topology
           ingested first, untimed: switch events are mapped through it), in a child
           process: discover, hash, read, parse, account, write every row and reject
           to DuckDB, commit. Imports and the interpreter's start are not timed.
  before   (--against) the same ingest with another checkout's code, e.g. the
           commit before a change, so before and after come from one run.
  floor    (--floor) what no ingest of these files can go below: DuckDB writing the rows and rejects goodput
           stored (read back from its warehouse, handed over as Arrow, one transaction into a fresh
           warehouse) plus the SHA-256 of the files' bytes (a file's identity); 'bound' is polars/floor,
           the best ratio any parser could reach; 'reach' is polars/(floor + polars), the best ratio of an ingest
           that parsed its files at the cost of the plain polars read and then stored them (no check, no
           typing, no line numbers on top): where it is below the goal, no parser in polars or DuckDB reaches it
           (DuckDB's own readers, measured, cost no less: bench/results-ingest-ratio.txt).
Every file is read once beforehand, so all find it in the page cache. Wall and
CPU seconds (the process's CPU, all threads) are printed, and the ratio
polars/goodput of each; issue 35's goal is >= 0.25 for slurm, network and telemetry. On a busy machine wall
seconds mostly measure the other processes: compare the CPU columns (the load
average is printed with the table).
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
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


def child(repo: Path, source_dir: Path, source: str, db: Path, floor: bool = False) -> None:
    """In a child process: ingest one source with ``repo``'s code; print {"wall", "cpu"} as JSON, with ``floor``
    also "floor_wall", "floor_cpu" (_floor)."""
    sys.path.insert(0, str(repo))
    from analysis import warehouse
    from analysis.ingest.engine import ingest_directory
    from analysis.ingest.options import load_options

    db.unlink(missing_ok=True)
    con = warehouse.connect(db)
    options = load_options(source_dir)
    if source != "topology":
        ingest_directory(con, source_dir, options, sources=["topology"])
    start = _clock()
    ingest_directory(con, source_dir, options, sources=[source])
    wall, cpu = _since(start)
    out = {"wall": wall, "cpu": cpu}
    if floor:
        out["floor_wall"], out["floor_cpu"] = _floor(con, source_dir, source, db.with_suffix(".floor.duckdb"))
    con.close()
    db.unlink(missing_ok=True)
    print(json.dumps(out))


def _floor(con, source_dir: Path, source: str, db: Path) -> tuple[float, float]:
    """Wall and CPU seconds of what any ingest of ``source`` must do: hash its files' bytes, and have DuckDB
    write the rows and rejects goodput stored for them (from Arrow, in one transaction, into a fresh
    warehouse with the same schema). Reading the files as lines and parsing them come on top."""
    import hashlib

    import polars as pl
    from analysis import warehouse
    from analysis.ingest.engine import discover
    from analysis.sources import SOURCES

    paths = [p for p, s in discover(source_dir, [source]) if s == source]
    frames = {t: con.sql(f"SELECT * FROM {t} WHERE file IN (SELECT path FROM ingested_files WHERE source = $s)",
                         params={"s": source}).pl() for t in SOURCES[source].tables}
    frames["rejects"] = con.sql("SELECT * FROM rejects WHERE source = $s", params={"s": source}).pl()
    db.unlink(missing_ok=True)
    target = warehouse.connect(db)
    start = _clock()
    for p in paths:
        with open(p, "rb") as f:
            digest = hashlib.sha256()
            while block := f.read(1 << 24):
                digest.update(block)
    target.execute("BEGIN TRANSACTION")
    for table, frame in frames.items():
        rel = target.from_arrow(frame.to_arrow(compat_level=pl.CompatLevel.newest()))
        rel.query("staged", f"INSERT INTO {table} BY NAME SELECT * FROM staged")
    target.execute("COMMIT")
    took = _since(start)
    target.close()
    db.unlink(missing_ok=True)
    return took


def _ingest(repo: Path, source_dir: Path, source: str, workdir: Path, floor: bool = False) -> dict:
    out = subprocess.run([sys.executable, __file__, "--child", str(repo), "--source", str(source_dir),
                          "--only", source, "--workdir", str(workdir), *(["--floor"] if floor else [])],
                         capture_output=True, text=True, cwd=repo, env={**os.environ, "PYTHONDONTWRITEBYTECODE": "1"})
    if out.returncode:
        sys.exit(f"ingest of {source} with {repo} failed:\n{out.stderr[-2000:]}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def throughput(base: Path, workdir: Path, only: set[str] | None = None, against: Path | None = None,
               floor: bool = False) -> list[dict]:
    """Per source: files, MB, polars and goodput (and --against) wall/CPU seconds, and with ``floor`` the
    floor (_floor) of this checkout's ingest, printed as it goes."""
    sys.path.insert(0, str(REPO))
    from analysis.ingest.engine import discover
    from analysis.sources import SOURCES

    by_source: dict[str, list[Path]] = {}
    for path, source in discover(base):
        if source is not None:
            by_source.setdefault(source, []).append(path)
    workdir.mkdir(parents=True, exist_ok=True)
    print(f"load average {' '.join(f'{x:.2f}' for x in os.getloadavg())} on {os.cpu_count()} cores", flush=True)
    runs = [("before", against), ("goodput", REPO)] if against else [("goodput", REPO)]
    head = f"{'source':12} {'files':>6} {'MB':>8} {'polars s':>9} {'cpu':>6}"
    for name, _ in runs:
        head += f" | {name + ' s':>10} {'cpu':>6} {'ratio':>6} {'cpu':>6}"
    if floor:
        head += f" | {'floor s':>8} {'cpu':>6} {'bound':>6} {'cpu':>6} {'reach':>6}"
    print(head, flush=True)
    rows = []
    for source in SOURCES:
        paths = by_source.get(source)
        if not paths or (only and source not in only):
            continue
        mb = sum(p.stat().st_size for p in paths) / 1e6
        _warm(paths)
        start = _clock()
        for p in paths:
            polars_read(p, source)
        plain = _since(start)
        row = {"source": source, "files": len(paths), "mb": mb, "polars_s": plain[0], "polars_cpu": plain[1]}
        line = f"{source:12} {len(paths):6} {mb:8.1f} {plain[0]:9.2f} {plain[1]:6.2f}"
        for name, repo in runs:
            got = _ingest(repo, base, source, workdir, floor and repo == REPO)
            wall, cpu = got["wall"], got["cpu"]
            row[f"{name}_s"], row[f"{name}_cpu"] = wall, cpu
            line += f" | {wall:10.2f} {cpu:6.2f} {plain[0] / wall:6.2f} {plain[1] / max(cpu, 1e-9):6.2f}"
            if "floor_cpu" in got:
                floor_row = (got["floor_wall"], got["floor_cpu"])
        if floor:
            row["floor_s"], row["floor_cpu"] = floor_row
            row["reach_cpu"] = plain[1] / (floor_row[1] + plain[1])
            line += (f" | {floor_row[0]:8.2f} {floor_row[1]:6.2f} {plain[0] / floor_row[0]:6.2f}"
                     f" {plain[1] / max(floor_row[1], 1e-9):6.2f} {row['reach_cpu']:6.2f}")
        rows.append(row)
        print(line, flush=True)
    print(f"load average {' '.join(f'{x:.2f}' for x in os.getloadavg())}", flush=True)
    return rows


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--source", type=Path, required=True, help="a source directory (e.g. a simulator output)")
    ap.add_argument("--only", help="comma-separated source folders (default: all)")
    ap.add_argument("--against", type=Path, help="another goodput checkout to time too (e.g. the code before)")
    ap.add_argument("--workdir", type=Path, default=Path("/tmp/goodput-ratio"))
    ap.add_argument("--floor", action="store_true", help="also time the floor: DuckDB writing the stored rows, hashing")
    ap.add_argument("--child", type=Path, help=argparse.SUPPRESS)  # internal: ingest with this checkout
    args = ap.parse_args()
    if args.child:
        child(args.child, args.source, args.only, args.workdir / f"ingest-{os.getpid()}.duckdb", args.floor)
        return
    throughput(args.source, args.workdir, set(args.only.split(",")) if args.only else None, args.against,
               args.floor)


if __name__ == "__main__":
    main()
