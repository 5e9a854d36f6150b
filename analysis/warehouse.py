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
        _delete_rows(con, [r["path"] for r in records])
        _insert(con, [(p.record, p.tables, p.rejects) for p in batch if p.record is not None])
        _upsert_files(con, records)
        for record in touched:
            sql.run(con, "update_file_mtime", record)
        con.execute("COMMIT")
    except BaseException:
        con.execute("ROLLBACK")
        raise


class FileWriter:
    """One file's rows written as they are parsed, part by part, in one transaction of its own (a file too
    large to hold: DuckDB spills a large transaction to disk): the file's old rows go first, its
    ingested_files row last, so a crash or a parse error part-way (abort) leaves the file as it was."""

    def __init__(self, con: duckdb.DuckDBPyConnection, path: str, source: str):
        self.con, self.record = con, {"path": path, "source": source}
        con.execute("BEGIN TRANSACTION")
        try:
            _delete_rows(con, [path])
        except BaseException:
            con.execute("ROLLBACK")
            raise

    def write(self, tables: dict[str, pl.DataFrame], rejects: pl.DataFrame) -> None:
        _insert(self.con, [(self.record, tables, rejects)])

    def commit(self, record: dict) -> None:
        _upsert_files(self.con, [record])
        self.con.execute("COMMIT")

    def abort(self) -> None:
        try:
            self.con.execute("ROLLBACK")
        except duckdb.Error:  # a failed COMMIT has ended the transaction already
            pass


def _delete_rows(con: duckdb.DuckDBPyConnection, paths: list[str]) -> None:
    if paths:
        con.register("staged_files", pl.DataFrame({"path": paths}, schema={"path": pl.Utf8}))
        sql.run(con, "delete_files_rows")
        con.unregister("staged_files")


def _insert(con: duckdb.DuckDBPyConnection, files: list[tuple[dict, dict[str, pl.DataFrame], pl.DataFrame]]) -> None:
    """``files``: (ingested_files record, table -> rows, rejects) of each file."""
    unknown = {t for _, tables, _ in files for t in tables} - set(RAW_TABLES)
    if unknown:
        raise ValueError(f"parser produced rows for unknown table(s) {sorted(unknown)}")
    for table in RAW_TABLES:
        frames = [tables[table].with_columns(file=pl.lit(record["path"]))
                  for record, tables, _ in files if tables.get(table) is not None and tables[table].height]
        if frames:
            sql.run_on(con, f"insert_{table}", "staged_rows", pl.concat(frames, how="diagonal_relaxed"))
    rejects = [r.with_columns(source=pl.lit(record["source"]), file=pl.lit(record["path"]))
               for record, _, r in files if r.height]
    if rejects:
        sql.run_on(con, "insert_rejects", "staged_rejects", pl.concat(rejects, how="vertical_relaxed"))


def _upsert_files(con: duckdb.DuckDBPyConnection, records: list[dict]) -> None:
    if records:
        con.register("staged_files", pl.DataFrame(records, infer_schema_length=None))
        sql.run(con, "upsert_ingested_files")
        con.unregister("staged_files")
