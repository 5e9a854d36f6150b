"""Port counters over the warehouse: series -> deltas -> node events, stored in one transaction.

From scratch, the readings are differenced a part of the hosts at a time (a series belongs to one host),
so memory follows PART_ROWS, not the length of the history. A nightly whose new readings all come after
the last build's (and whose earlier files are unchanged: analysis/derive/marks.py) differences only those, each
series against its last stored reading, and appends: the same rows a build from scratch gives."""
from __future__ import annotations

import duckdb
import polars as pl

from analysis import sql
from analysis.derive import marks
from analysis.network import counters

PART_ROWS = 1_000_000  # counter readings held at once (about 100 MB with their metric names)
SOURCES = ["telemetry", "network", "topology"]  # counters come from both folders; topology maps switch ports
STEP = "port_counter_events"


def run(con: duckdb.DuckDBPyConnection, thresholds: counters.PortThresholds = counters.PortThresholds()) -> dict:
    topology = con.sql("SELECT switch, port_key, host FROM topology").pl()
    mark = marks.now(con, SOURCES)
    readings, mark.data_through = sql.query(con, "derive/network_counter_span").row(0)
    last = marks.extendable(con, STEP, SOURCES, "port_counter_deltas")
    if last is not None and last.data_through is not None:
        new = sql.query(con, "derive/network_counter_new_span", {"sources": SOURCES, "through": last.through}).row(0)
        if new[0] == 0 or (new[0] <= PART_ROWS and new[1] > last.data_through):
            return _extend(con, topology, thresholds, last, mark)
    return _rebuild(con, topology, thresholds, mark, readings)


def _rebuild(con, topology, thresholds, mark: marks.Mark, readings: int) -> dict:
    parts = max(1, -(-readings // PART_ROWS))
    events, kept, n_series = [], [], 0
    for part in range(parts):
        d = counters.deltas(counters.series(sql.query(con, "derive/network_counter_series_part",
                                                      {"part": part, "parts": parts})))
        n_series += d.select("host", "device", "port", "counter").n_unique() if d.height else 0
        events.append(counters.port_events(d, topology, thresholds))
        kept.append(_errors(d))
    events = counters.numbered(pl.concat(events))
    kept = pl.concat(kept).sort("host", "device", "port", "counter", "time")
    sql.run_staged(con, {"staged_deltas": kept, "staged_port_events": events},
                   [("derive/store_port_counter_events", None), marks.record(STEP, mark)])
    return {"built": "all", "series": n_series, "error_deltas": kept.height, "events": events.height}


def _extend(con, topology, thresholds, last: marks.Mark, mark: marks.Mark) -> dict:
    readings = sql.query(con, "derive/network_counter_readings_new",
                         {"sources": SOURCES, "through": last.through, "data_through": last.data_through})
    d = counters.deltas(counters.series(readings)).filter(pl.col("time") > last.data_through)
    offset = sql.scalar(con, "derive/network_events_last_line")
    events = counters.numbered(counters.port_events(d, topology, thresholds)).with_columns(
        pl.col("line_no") + offset)
    kept = _errors(d).sort("host", "device", "port", "counter", "time")
    sql.run_staged(con, {"staged_deltas": kept, "staged_port_events": events},
                   [("derive/append_port_counter_events", None), marks.record(STEP, mark)])
    return {"built": "new readings", "error_deltas": kept.height, "events": events.height}


def _errors(d: pl.DataFrame) -> pl.DataFrame:
    return d.filter((pl.col("delta") > 0) & pl.col("counter").is_in(list(counters.SATURATES)))
