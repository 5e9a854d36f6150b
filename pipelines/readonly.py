"""`goodput sql`: run one ad-hoc query that can read the warehouse and nothing else.

Two independent fences, because either alone has gaps:
- the connection is read-only, with DuckDB's external access off (no COPY TO,
  EXPORT, ATTACH, INSTALL/LOAD, read_csv of other files) and its configuration
  locked (a SET cannot turn that back on); Python replacement scans are off, so
  a query cannot read this process's variables as tables;
- DuckDB's own parser classifies every statement, and only queries pass.
"""
from __future__ import annotations

from pathlib import Path

import duckdb

from pipelines.preflight import warehouse_error

# What the fence lets through: SELECT covers WITH, FROM-first queries, SHOW,
# DESCRIBE and SUMMARIZE; EXPLAIN shows a plan.
ALLOWED = {duckdb.StatementType.SELECT, duckdb.StatementType.EXPLAIN}
LOCKED_CONFIG = {"enable_external_access": False, "python_enable_replacements": False, "lock_configuration": True}


class QueryRefused(ValueError):
    """A statement `goodput sql` does not run, or a query that failed; one line."""


def check_statements(query: str) -> None:
    try:
        statements = duckdb.extract_statements(query)
    except duckdb.Error as exc:
        raise QueryRefused(_one_line(exc)) from None
    if not statements:
        raise QueryRefused("empty query: give one SELECT statement")
    if len(statements) > 1:
        raise QueryRefused(f"{len(statements)} statements: `goodput sql` runs one query at a time")
    if statements[0].type not in ALLOWED:
        name = (statements[0].query.split() or [statements[0].type.name])[0].upper()
        raise QueryRefused(f"refused: {name} statements are not allowed; `goodput sql` is read-only and runs queries "
                           "only (SELECT, WITH, SHOW, DESCRIBE, SUMMARIZE, EXPLAIN)")


def run_query(db: Path, query: str) -> tuple[list[str], list[tuple]]:
    """Columns and rows of ``query`` on the warehouse at ``db``; QueryRefused otherwise."""
    check_statements(query)
    if not Path(db).is_file():
        raise QueryRefused(f"no warehouse at {db}: run `goodput run --source DIR` first")
    try:
        con = duckdb.connect(str(db), read_only=True, config=LOCKED_CONFIG)
    except duckdb.Error as exc:
        raise QueryRefused(warehouse_error(exc, db)) from None
    try:
        relation = con.sql(query)
        if relation is None:  # a statement that slipped past the parser check and returned nothing
            raise QueryRefused("not a query: `goodput sql` runs SELECT statements only")
        return relation.columns, relation.fetchall()
    except duckdb.PermissionException as exc:
        raise QueryRefused("refused: `goodput sql` reads the warehouse only, no other file: " + _one_line(exc)) from None
    except duckdb.Error as exc:
        raise QueryRefused(_one_line(exc, 3)) from None  # 3 lines keep DuckDB's "Did you mean"
    finally:
        con.close()


def _one_line(exc: Exception, lines: int = 1) -> str:
    return " ".join(str(exc).split("\n")[:lines]).strip()
