"""Port counters over the warehouse: series -> deltas -> node events, stored in one transaction.

The readings are differenced a part of the hosts at a time (a series belongs to one host), so memory
follows PART_ROWS, not the length of the history."""
from __future__ import annotations

import duckdb
import polars as pl

from analysis import sql
from analysis.network import counters

PART_ROWS = 1_000_000  # counter readings held at once (about 100 MB with their metric names)


def run(con: duckdb.DuckDBPyConnection, thresholds: counters.PortThresholds = counters.PortThresholds()) -> dict:
    topology = con.sql("SELECT switch, port_key, host FROM topology").pl()
    parts = max(1, -(-sql.scalar(con, "count_network_counter_rows") // PART_ROWS))
    events, kept, n_series = [], [], 0
    for part in range(parts):
        d = counters.deltas(counters.series(sql.query(con, "network_counter_series_part",
                                                      {"part": part, "parts": parts})))
        n_series += d.select("host", "device", "port", "counter").n_unique() if d.height else 0
        events.append(counters.port_events(d, topology, thresholds))
        kept.append(d.filter((pl.col("delta") > 0) & pl.col("counter").is_in(list(counters.SATURATES))))
    events = counters.numbered(pl.concat(events))
    kept = pl.concat(kept).sort("host", "device", "port", "counter", "time")
    sql.run_staged(con, {"staged_deltas": kept, "staged_port_events": events}, [("store_port_counter_events", None)])
    return {"series": n_series, "error_deltas": kept.height, "events": events.height}
