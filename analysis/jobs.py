"""Derived Slurm tables: jobs and job_steps from the raw sacct records."""
from __future__ import annotations

import duckdb

from analysis import sql


def build_jobs(con: duckdb.DuckDBPyConnection) -> dict[str, int]:
    sql.run_steps(con, [("build_jobs", None), ("build_job_steps", None)])
    return {t: sql.scalar(con, f"count_{t}") for t in ("jobs", "job_steps")}


def map_switch_ports(con: duckdb.DuckDBPyConnection) -> int:
    """Attach switch events to the hosts cabled to their ports; returns how many stay unmapped."""
    sql.run(con, "map_switch_ports")
    return sql.scalar(con, "count_unmapped_switch_events")
