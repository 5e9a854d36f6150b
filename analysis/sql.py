"""Load and run the statements in sql/ (one statement or script per file, shipped as package data)."""
from __future__ import annotations

from functools import lru_cache

import duckdb

from analysis import resources

SQL_DIR = resources.sql_dir()


@lru_cache(maxsize=None)
def load(name: str) -> str:
    return (SQL_DIR / f"{name}.sql").read_text()


def statements(name: str) -> list[str]:
    """Split a script on ';' at line ends (our .sql files keep ';' out of strings)."""
    text = "\n".join(line for line in load(name).splitlines() if not line.strip().startswith("--"))
    return [s.strip() for s in text.split(";\n") if s.strip().strip(";")]


def run(con: duckdb.DuckDBPyConnection, name: str, params: dict | None = None) -> None:
    for stmt in statements(name):
        used = {k: v for k, v in (params or {}).items() if f"${k}" in stmt}
        con.execute(stmt, used or None)


def run_steps(con: duckdb.DuckDBPyConnection, steps: list[tuple[str, dict | None]]) -> None:
    """Run several sql/ scripts in one transaction: a failure leaves the tables as they were."""
    con.execute("BEGIN TRANSACTION")
    try:
        for name, params in steps:
            run(con, name, params)
        con.execute("COMMIT")
    except BaseException:
        con.execute("ROLLBACK")
        raise


def run_staged(con: duckdb.DuckDBPyConnection, frames: dict, steps: list[tuple[str, dict | None]]) -> None:
    """run_steps with ``frames`` (name -> polars frame) visible to the SQL as tables, for its duration only."""
    for name, frame in frames.items():
        con.register(name, frame)
    try:
        run_steps(con, steps)
    finally:
        for name in frames:
            con.unregister(name)


def run_on(con: duckdb.DuckDBPyConnection, name: str, table: str, frame) -> None:
    """Run sql/<name>.sql with the polars ``frame`` visible to it as ``table``. Not registered: a frame
    registered inside an open transaction stays alive until the transaction ends (DuckDB keeps the dropped
    view for it), so a large file written part by part in one transaction would hold every part."""
    rel = con.from_arrow(frame.to_arrow())
    for stmt in statements(name):
        rel.query(table, stmt)


def query_on(con: duckdb.DuckDBPyConnection, name: str, table: str, frame):
    """A single SELECT from sql/ with the polars ``frame`` visible to it as ``table`` (as run_on), as polars."""
    return con.from_arrow(frame.to_arrow()).query(table, load(name)).pl()


def query(con: duckdb.DuckDBPyConnection, name: str, params: dict | None = None):
    """Run a single SELECT from sql/ and return a polars frame."""
    return con.sql(load(name), params=params or None).pl()


def scalar(con: duckdb.DuckDBPyConnection, name: str, params: dict | None = None):
    """Run a one-value SELECT from sql/. fetchall, not fetchone: DuckDB 2 keeps a
    half-read result open and refuses further work on the connection."""
    return con.execute(load(name), params or None).fetchall()[0][0]
