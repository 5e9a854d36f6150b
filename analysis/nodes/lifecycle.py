"""The node lifecycle (docs/operations.md#the-node-lifecycle): each node's way through goodput's loop, from
the records alone: goodput's decisions (node_action_history), Slurm's drains and returns (node_outages), repair
tickets, and the validation results after a repair (benchmark runs, health checks); escalated after the
``escalate_drains``-th repair attempt for one component within ``escalate_days``. Table node_lifecycle (a row per
step) and view node_lifecycle_now (each node's latest); the nodes drain.sh may resume come from it."""
from __future__ import annotations

from datetime import datetime

import duckdb
import polars as pl

from analysis import sql
from analysis.settings import LifecycleConfig

RESUME_COLUMNS = {"host": pl.Utf8, "evidence": pl.Utf8, "since": pl.Datetime("us")}


def build(con: duckdb.DuckDBPyConnection, as_of: datetime, cfg: LifecycleConfig = LifecycleConfig()) -> pl.DataFrame:
    """node_lifecycle and node_lifecycle_now from the records before ``as_of``; returns node_lifecycle."""
    # built by the attribution, criteria and models steps: absent on an older warehouse, or before they ran
    sql.stand_ins(con, "node_outages", "taxonomy_causes")
    sql.run_steps(con, [("schema/node_action_history", None), ("schema/benchmark_verdicts", None),
                        ("models/build_node_lifecycle", {"as_of": as_of, "escalate_drains": cfg.escalate_drains,
                                                         "escalate_days": cfg.escalate_days}),
                        ("models/view_node_lifecycle_now", None)])
    return con.sql("SELECT * FROM node_lifecycle ORDER BY host, step").pl()


def resume_candidates(con: duckdb.DuckDBPyConnection) -> pl.DataFrame:
    """host, evidence, since: the nodes goodput drained that were repaired and passed validation since, still
    out of service as the warehouse knows (drain.sh checks the live state and goodput's reason before it
    resumes one)."""
    if not sql.table_exists(con, "node_lifecycle"):  # the view over it comes with it
        return pl.DataFrame(schema=RESUME_COLUMNS)
    return sql.query(con, "models/resume_candidates")
