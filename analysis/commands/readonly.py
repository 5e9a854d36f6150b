"""`goodput sql`: run one ad-hoc query that can read the warehouse and nothing else.

Two independent fences, because either alone has gaps:
- the connection is read-only, with DuckDB's external access off (no COPY TO,
  EXPORT, ATTACH, INSTALL/LOAD, read_csv of other files) and its configuration
  locked (a SET cannot turn that back on); Python replacement scans are off, so
  a query cannot read this process's variables as tables (the same on the
  published snapshot read while a run writes the warehouse);
- DuckDB's own parser classifies every statement, and only queries pass; an
  EXPLAIN passes only when what it explains is a query (EXPLAIN ANALYZE runs it).

A query runs at most ``timeout`` seconds: a timer interrupts the connection.
"""
from __future__ import annotations

import threading
from pathlib import Path

import duckdb

from analysis.commands.preflight import damaged_warehouse, warehouse_error
from analysis.snapshot import connect_reader
from analysis.warehouse import missing_warehouse

# What the fence lets through: SELECT covers WITH, FROM-first queries, SHOW,
# DESCRIBE and SUMMARIZE; EXPLAIN shows a plan.
ALLOWED = {duckdb.StatementType.SELECT, duckdb.StatementType.EXPLAIN}
LOCKED_CONFIG = {"enable_external_access": False, "python_enable_replacements": False, "lock_configuration": True}
DEFAULT_TIMEOUT_S = 300.0
_ALLOWED_NAMES = "(SELECT, WITH, SHOW, DESCRIBE, SUMMARIZE, EXPLAIN)"


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
    statement = statements[0]
    if statement.type not in ALLOWED:
        name = (statement.query.split() or [statement.type.name])[0].upper()
        raise QueryRefused(f"refused: {name} statements are not allowed; `goodput sql` is read-only and runs queries "
                           f"only {_ALLOWED_NAMES}")
    if statement.type == duckdb.StatementType.EXPLAIN:
        inner = _explained(statement.query)
        if inner is None or inner.type != duckdb.StatementType.SELECT:
            name = (inner.query.split() or ["?"])[0].upper() if inner is not None else "this"
            raise QueryRefused(f"refused: EXPLAIN of {name} statements is not allowed (EXPLAIN ANALYZE runs the "
                               f"statement); `goodput sql` explains queries only {_ALLOWED_NAMES}")


def _explained(query: str):
    """The statement an EXPLAIN [ANALYZE] [(options)] explains, or None when it cannot be told."""
    tokens = duckdb.tokenize(query)
    words = [(pos, query[pos:tokens[n + 1][0] if n + 1 < len(tokens) else len(query)].strip())
             for n, (pos, kind) in enumerate(tokens) if kind != duckdb.token_type.comment]
    i, depth = 1, 0  # words[0] is EXPLAIN
    while i < len(words) and (depth or words[i][1].upper() in ("ANALYZE", "ANALYSE", "(")):
        depth += words[i][1].count("(") - words[i][1].count(")")
        i += 1
    if i >= len(words):
        return None
    try:
        inner = duckdb.extract_statements(query[words[i][0]:])
    except duckdb.Error:
        return None
    return inner[0] if len(inner) == 1 else None


def run_query(db: Path, query: str, timeout: float | None = DEFAULT_TIMEOUT_S) -> tuple[list[str], list[tuple]]:
    """Columns and rows of ``query`` on the warehouse at ``db``; QueryRefused otherwise, also when the query
    runs longer than ``timeout`` seconds (None or 0: no limit)."""
    check_statements(query)
    if not Path(db).is_file():
        raise QueryRefused(missing_warehouse(db))
    try:
        con = connect_reader(db, LOCKED_CONFIG)  # while a run writes: the published snapshot, as locked
    except duckdb.Error as exc:
        raise QueryRefused(warehouse_error(exc, db)) from None
    return _run(con, query, timeout, db)


def run_fleet_query(db_dir: Path, query: str, timeout: float | None = DEFAULT_TIMEOUT_S
                    ) -> tuple[list[str], list[tuple]]:
    """As run_query, over every cluster warehouse in ``db_dir``: each table is the view of all clusters' rows
    with a ``cluster`` column (analysis/fleet/views.py), and each cluster's own tables are ``<cluster>.<table>``."""
    from analysis.fleet.clusters import FleetError
    from analysis.fleet.views import connect

    check_statements(query)
    try:
        con = connect(db_dir, LOCKED_CONFIG)  # attached first, then locked: the query can attach nothing
    except (FleetError, duckdb.Error) as exc:
        raise QueryRefused(_one_line(exc)) from None
    return _run(con, query, timeout, db_dir)


def _run(con: duckdb.DuckDBPyConnection, query: str, timeout: float | None, db: Path) -> tuple[list[str], list[tuple]]:
    timer = threading.Timer(timeout, con.interrupt) if timeout else None
    try:
        if timer:
            timer.start()
        relation = con.sql(query)
        if relation is None:  # a statement that slipped past the parser check and returned nothing
            raise QueryRefused("not a query: `goodput sql` runs SELECT statements only")
        return relation.columns, relation.fetchall()
    except duckdb.InterruptException:
        raise QueryRefused(f"the query ran longer than {timeout:g} s and was stopped: narrow it (a WHERE, a LIMIT) "
                           "or give --timeout more seconds (0: no limit)") from None
    except duckdb.PermissionException as exc:
        raise QueryRefused("refused: `goodput sql` reads the warehouse only, no other file: " + _one_line(exc)) from None
    except duckdb.Error as exc:
        # a corrupt block shows only when a query reads it
        raise QueryRefused(damaged_warehouse(exc, db) or _one_line(exc, 3)) from None  # 3 lines keep DuckDB's "Did you mean"
    finally:
        if timer:
            timer.cancel()
        con.close()


def _one_line(exc: Exception, lines: int = 1) -> str:
    return " ".join(str(exc).split("\n")[:lines]).strip()
