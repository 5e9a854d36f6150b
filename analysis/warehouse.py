"""The DuckDB warehouse: open, create the schema, write one file's rows atomically."""
from __future__ import annotations

import os
from pathlib import Path

import duckdb
import polars as pl

from analysis import sql

DEFAULT_DB = Path("data/warehouse.duckdb")
# Tables that hold rows read from files; each has (file, line_no).
RAW_TABLES = ("sacct_records", "node_state_periods", "node_events", "benchmark_results",
              "telemetry", "tickets", "topology", "job_log_lines", "host_addresses")


# DuckDB's default memory limit is 80% of the machine: on a shared box the
# nightly run would take it all, and spilling to disk is only a little slower.
DEFAULT_MEMORY_LIMIT = "1536MB"


def default_db_path() -> Path:
    return Path(os.environ.get("GOODPUT_DB", DEFAULT_DB))


def _config() -> dict:
    """DuckDB settings: $GOODPUT_MEMORY_LIMIT (e.g. 4GB) bounds DuckDB's own memory (it spills beyond it)."""
    return {"memory_limit": os.environ.get("GOODPUT_MEMORY_LIMIT") or DEFAULT_MEMORY_LIMIT}


def file_in_the_way(path: Path | str) -> Path | None:
    """The nearest existing parent of ``path`` when it is a file, not a folder (``--db notes.txt/w.duckdb``)."""
    for parent in Path(path).parents:
        if parent.exists():
            return None if parent.is_dir() else parent
    return None


def missing_warehouse(path: Path | str) -> str:
    blocker = file_in_the_way(path)
    if blocker is not None:
        return f"no warehouse at {path}: {blocker} is a file, not a folder; give --db a path inside a folder"
    return f"no warehouse at {path}: run `goodput run --source DIR` first"


def connect(path: Path | str | None = None, read_only: bool = False) -> duckdb.DuckDBPyConnection:
    path = Path(path) if path is not None else default_db_path()
    if read_only:
        if not path.exists():
            raise FileNotFoundError(missing_warehouse(path))
        return duckdb.connect(str(path), read_only=True, config=_config())
    path.parent.mkdir(parents=True, exist_ok=True)
    con = duckdb.connect(str(path), config=_config())
    sql.run(con, "schema")
    return con


def read_scalar(path: Path | str | None, statement: str):
    """One value of sql/<statement>.sql, read through a short read-only connection (the file stays free
    for a writer)."""
    con = connect(path, read_only=True)
    try:
        return sql.scalar(con, statement)
    finally:
        con.close()


def first_data_day(path: Path | str | None = None):
    """The first job-end day in the warehouse, or None when it cannot be read now (no file yet, no jobs,
    a warehouse from before `jobs` existed, or a writer holds the lock): where the daily partitions start."""
    try:
        return read_scalar(path, "first_data_day")
    except (FileNotFoundError, duckdb.Error):
        return None


def write_files(con: duckdb.DuckDBPyConnection, batch: list) -> None:
    """Write a batch of prepared files (analysis.ingest.Prepared) in one
    transaction: each file's old rows are swapped for its new ones, so a crash
    leaves every file either as it was or as it is now, never half a file."""
    if not batch:
        return
    records = [p.record for p in batch if p.record is not None and "status" in p.record]
    touched = [p.record for p in batch if p.record is not None and "status" not in p.record]
    con.execute("BEGIN TRANSACTION")
    try:
        if records:
            con.register("staged_files", pl.DataFrame({"path": [r["path"] for r in records]}, schema={"path": pl.Utf8}))
            if sql.scalar(con, "staged_files_known"):  # a new file has no old rows: no scan of every table for them
                sql.run(con, "delete_files_rows")
            con.unregister("staged_files")
        for table in RAW_TABLES:
            frames = [_with_file(p.tables[table], p.record["path"])
                      for p in batch if p.tables.get(table) is not None and p.tables[table].height]
            unknown = {t for p in batch for t in p.tables} - set(RAW_TABLES)
            if unknown:
                raise ValueError(f"parser produced rows for unknown table(s) {sorted(unknown)}")
            if frames:
                con.register("staged_rows", pl.concat(frames, how="diagonal_relaxed"))
                sql.run(con, f"insert_{table}")
                con.unregister("staged_rows")
        rejects = [_with_file(p.rejects, p.record["path"]).with_columns(source=pl.lit(p.record["source"]))
                   for p in batch if p.record is not None and p.rejects.height]
        if rejects:
            con.register("staged_rejects", pl.concat(rejects, how="vertical_relaxed"))
            sql.run(con, "insert_rejects")
            con.unregister("staged_rejects")
        if records:
            con.register("staged_files", pl.DataFrame(records, infer_schema_length=None))
            sql.run(con, "upsert_ingested_files")
            con.unregister("staged_files")
        for record in touched:
            sql.run(con, "update_file_mtime", record)
        con.execute("COMMIT")
    except BaseException:
        con.execute("ROLLBACK")
        raise


def _with_file(frame: pl.DataFrame, path: str) -> pl.DataFrame:
    """A file's rows with its path; rows of a batch of files (analysis.ingest_batch) already name theirs."""
    return frame if "file" in frame.columns else frame.with_columns(file=pl.lit(path))
