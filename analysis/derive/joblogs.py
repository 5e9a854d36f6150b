"""Job logs over the warehouse: job_log_lines placed on hosts, times and job
instances, stored as node events (source app) for classification and
attribution (sql/derive/build_job_log_events.sql).

A job's events depend on its own log lines and instances only (and on the addresses topology and
/etc/hosts give peers). A nightly places again just the jobs with new log files or changed instances
(sql/derive/stage_job_log_scope.sql), when every file the last build read is still as it was (analysis/derive/marks.py)
and no topology came since; otherwise every job. Either way the events are those a build from scratch
gives (tests/test_increment.py)."""
from __future__ import annotations

import duckdb

from analysis import sql
from analysis.derive import marks

SOURCES = ["joblogs", "topology"]
STEP = "job_log_events"


def build_events(con: duckdb.DuckDBPyConnection) -> dict:
    last = _extendable(con)
    scope = {"all": last is None, "through": last.through if last else None}
    stage = ("derive/stage_job_log_scope_all", None) if scope["all"] else ("derive/stage_job_log_scope", scope)
    sql.run_steps(con, [stage, ("derive/build_job_log_events", {"all": scope["all"]}),
                        marks.record(STEP, marks.now(con, SOURCES))])
    events, unplaced, jobs = con.execute(sql.load("derive/count_job_log_events")).fetchall()[0]
    orphans = sql.scalar(con, "derive/count_job_logs_without_job")
    return {"built": "all" if scope["all"] else "changed jobs", "events": events, "events_without_host": unplaced,
            "jobs": jobs, "log_lines_of_unknown_jobs": orphans}


def _extendable(con: duckdb.DuckDBPyConnection) -> marks.Mark | None:
    """The last build's mark when only some jobs need placing again; None when a log or topology file
    it read changed or went, or a topology file came (the peers' addresses)."""
    last = marks.extendable(con, STEP, SOURCES, "job_log_jobs")
    if last is None or sql.scalar(con, "ops/source_files_since", {"sources": ["topology"], "through": last.through}):
        return None
    return last
