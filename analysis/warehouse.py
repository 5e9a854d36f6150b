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
              "telemetry", "tickets", "topology")


def default_db_path() -> Path:
    return Path(os.environ.get("GOODPUT_DB", DEFAULT_DB))


def connect(path: Path | str | None = None, read_only: bool = False) -> duckdb.DuckDBPyConnection:
    path = Path(path) if path is not None else default_db_path()
    if read_only:
        if not path.exists():
            raise FileNotFoundError(f"no warehouse at {path}: run `goodput run --source DIR` first")
        return duckdb.connect(str(path), read_only=True)
    path.parent.mkdir(parents=True, exist_ok=True)
    con = duckdb.connect(str(path))
    sql.run(con, "schema")
    return con


def replace_file_rows(con: duckdb.DuckDBPyConnection, file: str, tables: dict[str, pl.DataFrame],
                      rejects: pl.DataFrame, source: str | None, file_record: dict) -> None:
    """Swap everything stored for ``file`` for the new rows in one transaction:
    a crash leaves either the old rows or the new ones, never half a file."""
    con.execute("BEGIN TRANSACTION")
    try:
        sql.run(con, "delete_file_rows", {"file": file})
        for table, frame in tables.items():
            if table not in RAW_TABLES:
                raise ValueError(f"parser produced rows for unknown table {table}")
            if frame.height:
                staged = frame.with_columns(file=pl.lit(file))
                con.register("staged_rows", staged)
                sql.run(con, f"insert_{table}")
                con.unregister("staged_rows")
        if rejects.height:
            con.register("staged_rejects", rejects.with_columns(source=pl.lit(source), file=pl.lit(file)))
            sql.run(con, "insert_rejects")
            con.unregister("staged_rejects")
        sql.run(con, "upsert_ingested_file", file_record)
        con.execute("COMMIT")
    except BaseException:
        con.execute("ROLLBACK")
        raise
