"""Repeat offenders: nodes whose own history holds more hardware incidents than chance would give them.

Meta's lemon signals need jobs (excluded, failed, multi-node failures); a node that a site's records show
going down again and again (drain reasons, tickets, kernel lines) is a lemon candidate without them. The
threshold is the fleet's own: at the rate the fleet has hardware incidents, how many in the window would a
node reach by chance with probability under ``p``? A node at or above it, and at ``minimum`` or more, is a
repeat offender (sql/models/build_repeat_offenders.sql). With no labels this is the documented default
(docs/methods.md#repeat-offenders); with labels the lemon classifier learns its own thresholds.
"""
from __future__ import annotations

import math

from datetime import datetime

import duckdb

from analysis import sql
from analysis.settings import OffenderConfig


def poisson_threshold(rate: float, p: float, minimum: int) -> int:
    """The fewest incidents n >= minimum with P(N >= n) < p for N ~ Poisson(rate)."""
    n, below = 0, 0.0  # below = P(N < n)
    term = math.exp(-rate)
    while True:
        if n >= minimum and 1.0 - below < p:
            return n
        below += term
        n += 1
        term *= rate / n
        if n > 10_000:  # a rate this high means every node fails constantly: nothing stands out
            return n


def build(con: duckdb.DuckDBPyConnection, as_of: datetime, cfg: OffenderConfig = OffenderConfig(),
          after_s: int = 300) -> dict:
    """Write repeat_offenders for ``as_of`` (incidents_as_of and node_population built for it; a job's blame
    known ``after_s`` after its end); -> the fleet's rate per node over the window, the threshold used and
    how many nodes reach it."""
    start = sql.scalar(con, "models/data_start")
    # the window the history covers: "6 in 180 days" would overstate 14 days of data
    days = cfg.window_days
    if start is not None:
        days = max(1, min(days, math.ceil((as_of - start).total_seconds() / 86400)))
    sql.run(con, "schema/repeat_offenders")
    sql.run(con, "models/stage_hardware_incidents", {"as_of": as_of, "offender_days": days, "after_s": after_s})
    counts = sql.query(con, "models/offender_fleet_rate", {"as_of": as_of})
    incidents, nodes = counts.row(0)
    rate = incidents / nodes if nodes else 0.0
    threshold = poisson_threshold(rate, cfg.p, cfg.minimum)
    sql.run(con, "models/build_repeat_offenders", {
        "as_of": as_of, "offender_days": days, "min_incidents": threshold, "fleet_rate": rate,
        "rma_repeats": cfg.rma_repeats})
    return {"fleet_rate": rate, "threshold": threshold, "offenders": sql.scalar(con, "models/offender_count",
                                                                               {"as_of": as_of})}
