"""Derived job tables: jobs and job_steps from the raw sacct records, and jobs from Kubernetes workloads
(analysis/derive/k8s_jobs.py: rebuilt whole each time, from the objects' newest states).

A nightly adds a day's dump to months of them: when every sacct file the last build read is still as it
was (analysis/derive/marks.py), only the jobs the new files name are chosen again; otherwise all are. Either way
the tables are what a build from scratch gives (tests/test_increment.py)."""
from __future__ import annotations

import duckdb

from analysis import sql
from analysis.derive import k8s_jobs, marks

SOURCES = ["slurm", k8s_jobs.SOURCE]  # a file of either forgotten or read again: rebuilt from scratch


def build_jobs(con: duckdb.DuckDBPyConnection) -> dict[str, int]:
    last = marks.extendable(con, "jobs", SOURCES, "jobs")
    scope = {"all": last is None, "through": last.through if last else None}
    sql.run_steps(con, [k8s_jobs.stage_step(con, scope["through"]), ("derive/changed_jobs", scope),
                        ("derive/stage_jobs", None), ("derive/stage_job_steps", None),
                        *([("derive/drop_jobs", None)] if scope["all"] else []), ("schema/jobs", None),
                        ("schema/job_steps", None), ("derive/store_jobs", {"all": scope["all"]}),
                        marks.record("jobs", marks.now(con, SOURCES))])
    return {"changed": "all" if scope["all"] else "new dumps",
            **{t: sql.count(con, t) for t in ("jobs", "job_steps")}}


def map_switch_ports(con: duckdb.DuckDBPyConnection) -> int:
    """Attach switch events to the hosts cabled to their ports; returns how many stay unmapped."""
    sql.run(con, "derive/map_switch_ports")
    return sql.scalar(con, "derive/count_unmapped_switch_events")
