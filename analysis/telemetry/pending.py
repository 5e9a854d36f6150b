"""What a detection run judges: the covered jobs telemetry_jobs does not hold as they are now, and the
metrics each job's telemetry carries (the detector's metric set is checked against them: saved.py)."""
from __future__ import annotations

import duckdb
import polars as pl

from analysis import sql
from analysis.telemetry import saved


def scored_jobs(con: duckdb.DuckDBPyConnection) -> pl.DataFrame | None:
    """telemetry_jobs as stored (None before the first run)."""
    if not sql.table_exists(con, "telemetry_jobs"):
        return None
    return con.sql("SELECT * FROM telemetry_jobs").pl()


def unscored(jobs: pl.DataFrame, stored: pl.DataFrame | None) -> pl.DataFrame:
    """The covered jobs telemetry_jobs does not hold as they are now: new jobs, and jobs whose coverage
    changed since they were scored (state, span, hosts, hosts reporting: telemetry or accounting that
    came late). A job stored as it is keeps its verdict, whichever model gave it."""
    if stored is None:
        return jobs
    cols = ["job_id", "instance", "state", "start_time", "end_time", "hosts", "hosts_reporting", "telemetry_from",
            "telemetry_to"]
    as_key = [pl.col("job_id").cast(pl.Utf8), pl.col("hosts").list.join(","),
              *(pl.col(c) for c in cols if c not in ("job_id", "hosts"))]
    keyed = jobs.with_columns(_k=pl.struct(as_key))
    return keyed.filter(~pl.col("_k").is_in(stored.select(pl.struct(as_key)).to_series().implode())).drop("_k")


def job_metrics(frame: pl.DataFrame | None) -> dict[str, list[str] | None]:
    """saved.key -> the job's metrics (telemetry_jobs.metrics; None where a row predates the column)."""
    if frame is None or "metrics" not in frame.columns:
        return {}
    return {saved.key(j, i): m for j, i, m in frame.select("job_id", "instance", "metrics").iter_rows()}


def staged_metrics(con: duckdb.DuckDBPyConnection, jobs: pl.DataFrame) -> pl.DataFrame:
    """``jobs`` with, as ``metrics``, the machine-level metrics with a usable value in their staged
    telemetry (what frames.build keeps; an empty list without any)."""
    found = sql.query(con, "telemetry/staged_job_metrics").with_columns(pl.col("job_id").cast(jobs["job_id"].dtype))
    return jobs.join(found, on=["job_id", "instance"], how="left", maintain_order="left").with_columns(
        pl.col("metrics").fill_null(pl.lit([], pl.List(pl.Utf8))))


def among(jobs: pl.DataFrame, *subsets: pl.DataFrame) -> pl.DataFrame:
    """The jobs in any of ``subsets``, once each, in telemetry_jobs' order (by start)."""
    keys = pl.concat([s.select("job_id", "instance") for s in subsets])
    return jobs.join(keys.unique(), on=["job_id", "instance"], how="semi", maintain_order="left")
