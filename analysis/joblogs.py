"""Job logs over the warehouse: job_log_lines placed on hosts, times and job
instances, stored as node events (source app) for classification and
attribution (sql/build_job_log_events.sql)."""
from __future__ import annotations

import duckdb

from analysis import sql


def build_events(con: duckdb.DuckDBPyConnection) -> dict:
    sql.run_steps(con, [("build_job_log_events", None)])
    events, unplaced, jobs = con.execute(sql.load("count_job_log_events")).fetchall()[0]
    orphans = sql.scalar(con, "count_job_logs_without_job")
    return {"events": events, "events_without_host": unplaced, "jobs": jobs, "log_lines_of_unknown_jobs": orphans}
