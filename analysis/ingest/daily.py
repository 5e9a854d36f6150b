"""Per-day data-quality facts the nightly partitions check before reporting."""
from __future__ import annotations

from datetime import date, datetime, timedelta

import duckdb
import polars as pl

from analysis import sql
from analysis.sources import SOURCES


def store_daily_volume(con: duckdb.DuckDBPyConnection, day: date, history_days: int = 7) -> pl.DataFrame:
    """Rows per source on ``day`` (by the rows' own time), stored in
    daily_source_volume together with the ``history_days`` before it, so the
    checks have a baseline even on a first or one-shot run."""
    for back in range(history_days, 0, -1):
        _store(con, day - timedelta(days=back))
    return _store(con, day)


def source_volume(con: duckdb.DuckDBPyConnection, day: date) -> pl.DataFrame:
    """Rows per daily-feed source whose own time falls on ``day`` (each source's ``volume`` statement, in the
    registry: job ends, events, benchmark runs, samples). Slurm's jobs and its node-state events both count as
    slurm. Events found by goodput itself (job logs, port counters, telemetry) are findings, not feeds: a day
    without failures has none."""
    parts = [sql.query(con, s.volume, {"day": day, "source": s.events or s.folder})
             for s in SOURCES.values() if s.volume]
    return pl.concat(parts, how="vertical_relaxed").group_by("source").agg(pl.col("rows").sum())


def _store(con: duckdb.DuckDBPyConnection, day: date) -> pl.DataFrame:
    volume = source_volume(con, day)
    con.register("staged_volume", volume)
    try:
        sql.run_steps(con, [("schema/daily_source_volume", None), ("ops/store_daily_source_volume", {"day": day})])
    finally:
        con.unregister("staged_volume")
    return volume


def missing_sources(con: duckdb.DuckDBPyConnection, day: date, min_days: int = 6) -> pl.DataFrame:
    """Sources with rows on at least ``min_days`` of the previous 7 days but none on ``day``. A source
    that already skipped two of those days (per-job telemetry snapshots, weekly validation runs)
    skipping another is its rhythm, not missing input."""
    return sql.query(con, "ops/daily_volume_problems", {"day": day, "min_days": min_days}).filter(pl.col("rows") == 0)


def volume_drops(con: duckdb.DuckDBPyConnection, day: date, ratio: float = 0.3, min_days: int = 4) -> pl.DataFrame:
    """Sources present but far below their 7-day median (a softer signal)."""
    v = sql.query(con, "ops/daily_volume_problems", {"day": day, "min_days": min_days})
    return v.filter((pl.col("rows") > 0) & (pl.col("rows") < ratio * pl.col("median_rows")))


def reject_rate(con: duckdb.DuckDBPyConnection, since: datetime) -> dict:
    """Rejected share of the lines in files ingested since ``since`` (naive UTC)."""
    return sql.query(con, "ops/reject_rate", {"since": since}).row(0, named=True)
