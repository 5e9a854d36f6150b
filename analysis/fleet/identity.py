"""Which cluster a warehouse holds: named by the first run that gave one, and checked on every later run."""
from __future__ import annotations

import duckdb

from analysis import sql
from analysis.fleet.clusters import FleetError, check_name

SHOWN = 5


def cluster_of(con: duckdb.DuckDBPyConnection) -> str | None:
    """None also for a warehouse older than cluster names, read-only (its schema not yet migrated)."""
    return sql.scalar(con, "ops/warehouse_cluster") if sql.table_exists(con, "warehouse_cluster") else None


def claim(con: duckdb.DuckDBPyConnection, cluster: str, db) -> None:
    """Name the warehouse's cluster; refuse a warehouse that holds another cluster's data."""
    held = cluster_of(con)
    if held is not None and held != check_name(cluster):
        raise FleetError(f"{db} holds cluster {held}'s data, not {cluster}'s: give each cluster its own warehouse "
                         f"(--db), or run {held} into it")
    if held is None:
        sql.run(con, "ops/claim_cluster", {"cluster": cluster})


def misfiled_sacct(con: duckdb.DuckDBPyConnection, cluster: str) -> str | None:
    """One line naming the sacct files whose Cluster field is another cluster's (None: all agree)."""
    found = sql.query(con, "ops/sacct_other_clusters", {"cluster": cluster})
    if not found.height:
        return None
    named = "; ".join(f"{r['file']} says Cluster={r['cluster']} ({r['n_rows']} rows)"
                      for r in found.head(SHOWN).iter_rows(named=True))
    more = f" and {found.height - SHOWN} more" if found.height > SHOWN else ""
    return (f"sacct dumps of another cluster in {cluster}'s source: {named}{more}; their jobs would mix with "
            f"{cluster}'s hosts: move them to their cluster's tree and `goodput forget` them here")
