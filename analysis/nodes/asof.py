"""incidents_as_of (sql/models/build_incidents_as_of.sql), built once for all the node models of one as-of.

The lemon features, the incident samples and the ladder each read node_incidents as known at the as-of. Each
builds it when called alone; run_models builds it once for the three (``once``), their inputs (incidents,
classified events, tickets) being the same for all of them: a third of the step's SQL in a nightly."""
from __future__ import annotations

from contextlib import contextmanager
from datetime import datetime

import duckdb

from analysis import sql

BUILD = "models/build_incidents_as_of"
_built: dict[int, datetime] = {}  # connection -> the as-of its incidents_as_of holds, inside ``once``


def steps(con: duckdb.DuckDBPyConnection, as_of: datetime) -> list[tuple[str, dict]]:
    """The run_steps entry that builds incidents_as_of for ``as_of``; none when ``once`` built it already."""
    return [] if _built.get(id(con)) == as_of else [(BUILD, {"as_of": as_of})]


@contextmanager
def once(con: duckdb.DuckDBPyConnection, as_of: datetime):
    """Within the block, incidents_as_of is built for ``as_of`` and not again (the callers' ``steps`` are empty)."""
    sql.run(con, BUILD, {"as_of": as_of})
    _built[id(con)] = as_of
    try:
        yield
    finally:
        _built.pop(id(con), None)
