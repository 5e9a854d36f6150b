"""Port counters over the warehouse: series -> deltas -> node events, stored in one transaction."""
from __future__ import annotations

import duckdb
import polars as pl

from analysis import sql
from analysis.network import counters


def run(con: duckdb.DuckDBPyConnection, thresholds: counters.PortThresholds = counters.PortThresholds()) -> dict:
    d = counters.deltas(counters.series(sql.query(con, "network_counter_series")))
    topology = con.sql("SELECT switch, port_key, host FROM topology").pl()
    events = counters.port_events(d, topology, thresholds)
    kept = d.filter((pl.col("delta") > 0) & pl.col("counter").is_in(list(counters.SATURATES)))
    sql.run_staged(con, {"staged_deltas": kept, "staged_port_events": events}, [("store_port_counter_events", None)])
    return {"series": d.select("host", "device", "port", "counter").n_unique() if d.height else 0,
            "error_deltas": kept.height, "events": events.height}
