"""Load and run the statements in sql/ (one statement or script per file, shipped as package data).

A statement is named by the stage that runs it and its file: ``"derive/build_job_runs"`` is
sql/derive/build_job_runs.sql (the stages: sql/__init__.py). One-line reads of a whole table go through
``count`` and ``table_exists`` here rather than a file each.

Values are always parameters ($name). A table name cannot be one: the raw tables a statement covers come from
the source registry (analysis/sources.py), never from input. In a file, a line naming {raw_table} is written
once per raw table, the first copy without a leading UNION ALL (the delete before a file is read again, the
line accounting); ``raw_table=`` writes that one table instead (its insert)."""
from __future__ import annotations

import re
from functools import lru_cache
from pathlib import Path

import duckdb
import polars as pl

from analysis import package_files, sources

SQL_DIR = package_files.sql_dir()
RAW_TABLE = "{raw_table}"
STAGES = ("schema", "ingest", "derive", "metrics", "models", "criteria", "telemetry", "report", "ops", "fleet",
          "alerts")
_NAME = re.compile(r"(?P<stage>[a-z]+)/[a-z0-9_]+")  # '<stage>/<name>'
# a table or view a statement declares (temporary ones aside): the names count and table_exists accept
_DECLARED = re.compile(r"^\s*CREATE\s+(?:OR\s+REPLACE\s+)?(?:TABLE|VIEW)\s+(?:IF\s+NOT\s+EXISTS\s+)?(\w+)",
                       re.IGNORECASE | re.MULTILINE)


@lru_cache(maxsize=None)
def _text(name: str) -> str:
    found = _NAME.fullmatch(name)
    if found is None or found["stage"] not in STAGES:
        raise ValueError(f"not a statement name: {name!r} (expected '<stage>/<name>', stage one of {STAGES})")
    return SQL_DIR.joinpath(*name.split("/")).with_suffix(".sql").read_text()


@lru_cache(maxsize=None)
def tables() -> frozenset[str]:
    """The tables and views sql/ declares: what goodput's warehouse can hold."""
    return frozenset(m.lower() for f in SQL_DIR.rglob("*.sql") for m in _DECLARED.findall(f.read_text()))


def _table(name: str) -> str:
    """``name`` quoted as an identifier, once it is known to be a table sql/ declares: a table name cannot be a
    statement parameter, so it is checked, never passed through as text."""
    if name not in tables():
        raise ValueError(f"not a table goodput declares: {name!r}")
    return f'"{name}"'


def count(con: duckdb.DuckDBPyConnection, table: str) -> int:
    """The rows of one of goodput's tables or views."""
    return con.execute(f"SELECT count(*) FROM {_table(table)}").fetchall()[0][0]


def column_exists(con: duckdb.DuckDBPyConnection, table: str, column: str) -> bool:
    """Whether one of goodput's tables has this column yet (a column added by a newer release)."""
    _table(table)
    return con.execute("SELECT count(*) > 0 FROM duckdb_columns() WHERE table_name = ? AND column_name = ?",
                       [table, column]).fetchall()[0][0]


def table_exists(con: duckdb.DuckDBPyConnection, table: str) -> bool:
    """Whether the warehouse has this (persistent) table yet: most are created by the step that first writes them."""
    _table(table)
    return con.execute("SELECT count(*) > 0 FROM duckdb_tables() WHERE table_name = ? AND NOT temporary",
                       [table]).fetchall()[0][0]


def stand_ins(con: duckdb.DuckDBPyConnection, *tables: str) -> None:
    """An empty TEMP stand-in (sql/models/stand_in_<table>.sql) for each of ``tables`` the warehouse lacks: built
    by a step that has not run on it yet (an older warehouse), read by the caller either way."""
    for table in tables:
        if not table_exists(con, table):
            run(con, f"models/stand_in_{table}")


def load(name: str, raw_table: str | None = None) -> str:
    """The text of sql/<name>.sql, its {raw_table} lines written out (module docstring)."""
    text = _text(name)
    if RAW_TABLE not in text:
        return text
    tables = sources.raw_tables()
    if raw_table is not None:
        if raw_table not in tables:
            raise ValueError(f"{raw_table} is no raw table of the source registry")
        return text.replace(RAW_TABLE, f'"{raw_table}"')
    return _each_raw_table(text, tables)


@lru_cache(maxsize=64)
def _each_raw_table(text: str, tables: tuple[str, ...]) -> str:
    out = []
    for line in text.splitlines():
        if RAW_TABLE not in line:
            out.append(line)
            continue
        indent, body = line[:len(line) - len(line.lstrip())], line.lstrip()
        copies = [body.replace(RAW_TABLE, f'"{t}"') for t in tables]
        copies[0] = copies[0].removeprefix("UNION ALL ")
        out += [indent + c for c in copies]
    return "\n".join(out) + "\n"


def _split(text: str) -> list[str]:
    """Split a script on ';' at line ends (our .sql files keep ';' out of strings)."""
    text = "\n".join(line for line in text.splitlines() if not line.strip().startswith("--"))
    return [s.strip() for s in text.split(";\n") if s.strip().strip(";")]


def statements(name: str, raw_table: str | None = None) -> list[str]:
    return _split(load(name, raw_table))


def run_file(con: duckdb.DuckDBPyConnection, path: Path) -> None:
    """Run a script from outside sql/: the DDL of a source added to the registry at run time."""
    for stmt in _split(Path(path).read_text()):
        con.execute(stmt)


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


def run_on(con: duckdb.DuckDBPyConnection, name: str, table: str, frame, raw_table: str | None = None) -> None:
    """Run sql/<stage>/<name>.sql with the polars ``frame`` visible to it as ``table``. Not registered: a frame
    registered inside an open transaction stays alive until the transaction ends (DuckDB keeps the dropped
    view for it), so a large file written part by part in one transaction would hold every part. Handed over
    as Arrow string views (polars' own layout): no copy of every string into Arrow's older layout, which cost
    a fifth of a telemetry insert."""
    rel = con.from_arrow(frame.to_arrow(compat_level=pl.CompatLevel.newest()))
    for stmt in statements(name, raw_table):
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
