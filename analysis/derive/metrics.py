"""Reliability metrics in the warehouse: run ETTR, cluster failure rate, MTTF by
job size, failure rate over time, goodput and second-order preemptions, C4
downtime and Aegis P_deg. Set operations live in sql/metrics/."""
from __future__ import annotations

import hashlib

import duckdb
import polars as pl

from analysis import sql
from analysis.derive import ettr, marks
from analysis.settings import MetricsConfig

PROJECTION_GPUS = [8 * 2 ** k for k in range(15)]  # 8 .. 131,072


ETTR_STATEMENTS = ("metrics/stage_job_run_ettr_inputs", "metrics/stage_job_run_ettr_scope",
                   "metrics/stage_job_run_ettr_scope_all", "metrics/store_ettr_parameters",
                   "metrics/build_job_run_ettr", "metrics/build_run_downtime", "metrics/store_job_run_ettr",
                   "metrics/replace_job_run_ettr")


def ettr_mark(cfg: MetricsConfig) -> str:
    """The derived_marks step of a job_run_ettr build: the digest of its statements, u0, Δt and overrides, so that a
    build by other code or settings is never extended (every run is computed again)."""
    text = "\n".join(sql.load(name) for name in ETTR_STATEMENTS) + repr((cfg.u0_s, cfg.dt_s, cfg.overrides))
    return "job_run_ettr " + hashlib.sha256(text.encode()).hexdigest()[:16]


def build_run_ettr(con: duckdb.DuckDBPyConnection, cfg: MetricsConfig) -> int:
    """job_run_ettr and run_downtime. When both hold a build of these statements and settings (the mark), only the
    runs whose inputs changed (their jobs' rows, attributions, progress lines, app events), or whose windows reach a
    day whose drains changed, are computed again (sql/metrics/stage_job_run_ettr_scope.sql); otherwise every run. Either way the tables are the
    same (tests/test_ettr_increment.py)."""
    params = pl.DataFrame(cfg.overrides, schema={"scope": pl.Utf8, "key": pl.Utf8, "u0_s": pl.Int64, "dt_s": pl.Int64})
    mark = ettr_mark(cfg)
    sql.run_steps(con, [("schema/job_run_ettr_inputs", None), ("metrics/stage_job_run_ettr_inputs", None)])
    extend = (sql.table_exists(con, "job_run_ettr") and sql.table_exists(con, "run_downtime")
              and sql.query(con, "ops/derived_mark_get", {"step": mark}).height > 0)
    scope, store = (("metrics/stage_job_run_ettr_scope", "metrics/store_job_run_ettr") if extend else
                    ("metrics/stage_job_run_ettr_scope_all", "metrics/replace_job_run_ettr"))
    sql.run_staged(con, {"staged_ettr_parameters": params}, [
        ("metrics/store_ettr_parameters", None), (scope, None),
        ("metrics/build_job_run_ettr", {"u0_s": cfg.u0_s, "dt_s": cfg.dt_s}), ("metrics/build_run_downtime", None),
        (store, None), ("metrics/forget_job_run_ettr_marks", None), marks.record(mark, marks.Mark(0, None))])
    return sql.count(con, "job_run_ettr")


def build_node_gpus(con: duckdb.DuckDBPyConnection) -> int:
    """Each node's GPUs from the allocations (node_gpus); returns the fleet's node size."""
    sql.run_steps(con, [("metrics/build_node_gpus", None)])
    return fleet_gpus_per_node(con)


def fleet_gpus_per_node(con: duckdb.DuckDBPyConnection) -> int:
    """The GPUs most nodes have: how many GPUs make a node when r, MTTF and ETTR count nodes."""
    return int(sql.scalar(con, "metrics/fleet_gpus_per_node"))


def build_failure_rates(con: duckdb.DuckDBPyConnection) -> dict:
    """Cluster r (Meta's definition), MTTF per size bucket with 90% Gamma
    intervals, the 1/(N r) projection, and the failure rate over time."""
    sql.run_steps(con, [("metrics/build_cluster_failure_rate", None), ("metrics/build_failure_rate_over_time", None)])
    rate = sql.query(con, "metrics/select_cluster_failure_rate").row(0, named=True)
    r = rate["r_per_node_day"] or 0.0
    per_node = fleet_gpus_per_node(con)
    counts = sql.query(con, "metrics/mttf_by_job_size_counts")
    rows = []
    for b in counts.iter_rows(named=True):
        lo, hi = ettr.gamma_rate_ci(b["failures"], b["runtime_hours"]) if b["runtime_hours"] else (0.0, 0.0)
        rows.append({**b, "mttf_hours": b["runtime_hours"] / b["failures"] if b["failures"] else None,
                     "mttf_ci_low_hours": 1 / hi if hi else None, "mttf_ci_high_hours": 1 / lo if lo else None,
                     "projected_mttf_hours": ettr.job_mttf_hours(b["bucket_gpus"] / per_node, r) if r else None})
    mttf = pl.DataFrame(rows, schema={"bucket_gpus": pl.Int64, "instances": pl.Int64, "runtime_hours": pl.Float64,
                                      "failures": pl.Int64, "mttf_hours": pl.Float64, "mttf_ci_low_hours": pl.Float64,
                                      "mttf_ci_high_hours": pl.Float64, "projected_mttf_hours": pl.Float64})
    projection = pl.DataFrame({"gpus": PROJECTION_GPUS, "nodes": [g // per_node for g in PROJECTION_GPUS],
                               "projected_mttf_hours": [ettr.job_mttf_hours(g / per_node, r) if r else None
                                                        for g in PROJECTION_GPUS]})
    con.register("staged_mttf", mttf)
    con.register("staged_projection", projection)
    try:
        sql.run_steps(con, [("metrics/store_mttf", None)])
    finally:
        con.unregister("staged_mttf")
        con.unregister("staged_projection")
    return rate


def build_goodput(con: duckdb.DuckDBPyConnection, cfg: MetricsConfig) -> dict:
    sql.stand_ins(con, "straggler_episodes")  # a warehouse whose straggler step has not run yet
    sql.run_steps(con, [("metrics/build_second_order_preemptions", {"window_s": cfg.second_order_window_s, "dt_s": cfg.dt_s}),
               ("metrics/build_goodput", {"dt_s": cfg.dt_s})])
    return sql.query(con, "metrics/goodput_summary").row(0, named=True)


def build_iteration_degradation(con: duckdb.DuckDBPyConnection, slack: float = 1.2) -> int:
    sql.run_steps(con, [("metrics/build_iteration_degradation", {"slack": slack})])
    return sql.count(con, "iteration_degradation")
