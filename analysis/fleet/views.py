"""The fleet's tables: each cluster's warehouse attached read-only, and a view per table over all of them with a
``cluster`` column. Nothing is copied; a cluster whose nightly is writing is read from its published snapshot."""
from __future__ import annotations

import re
from pathlib import Path

import duckdb

from analysis import sql
from analysis.fleet.clusters import FleetError, check_name, warehouses_in
from analysis.snapshot import is_locked, snapshot_path

_TABLE = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
OWN_NAME = "warehouse_cluster"  # a cluster warehouse's name for itself: in the fleet, every row's cluster column


def ident(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def literal(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


def connect(db_dir: Path, config: dict | None = None) -> duckdb.DuckDBPyConnection:
    """An in-memory connection with every cluster warehouse of ``db_dir`` attached read-only (by cluster name) and
    a view per table over all clusters (in the in-memory database); ``config`` (e.g. readonly.LOCKED_CONFIG) applies after the
    attachments, so a locked connection can attach nothing more."""
    found = warehouses_in(db_dir)
    con = duckdb.connect()
    try:
        for cluster, path in found.items():
            _attach(con, cluster, path)
        con.execute("USE memory")
        create_views(con, list(found))
        for key, value in (config or {}).items():
            con.execute(f"SET {key} = {literal(str(value)) if isinstance(value, str) else str(value).lower()}")
    except BaseException:
        con.close()
        raise
    return con


def _attach(con: duckdb.DuckDBPyConnection, cluster: str, path: Path) -> None:
    statement = sql.load("fleet/attach")
    try:
        con.execute(statement.format(path=literal(str(path)), cluster=ident(check_name(cluster))))
    except duckdb.Error as exc:
        snapshot = snapshot_path(path)
        if not (is_locked(exc) and snapshot.is_file()):
            raise FleetError(f"cannot read cluster {cluster}'s warehouse {path}: {str(exc).splitlines()[0]}") from None
        con.execute(statement.format(path=literal(str(snapshot)), cluster=ident(cluster)))  # its nightly is writing


def create_views(con: duckdb.DuckDBPyConnection, clusters: list[str]) -> list[str]:
    """A view per table or view any cluster has, each cluster's rows under its name; the view names, sorted."""
    held: dict[str, list[str]] = {}
    for cluster, table, _kind in sql.query(con, "fleet/catalog_tables", {"clusters": clusters}).iter_rows():
        if _TABLE.fullmatch(table) and table != OWN_NAME:  # goodput's names; anything else is not its table
            held.setdefault(table, []).append(cluster)
    template = sql.load("fleet/fleet_view")
    for table, where in held.items():
        each = "\nUNION ALL BY NAME\n".join(
            f"SELECT {literal(c)} AS cluster, COLUMNS(lambda c: c <> 'cluster') FROM {ident(c)}.main.{ident(table)}"
            for c in where)  # a table's own cluster column (sacct's Cluster field) is the run's, checked equal
        con.execute(template.format(table=ident(table), each_cluster=each))
    return sorted(held)
