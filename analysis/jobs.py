"""Derived Slurm tables: jobs and job_steps from the raw sacct records.

A nightly adds a day's dump to months of them: when every sacct file the last build read is still as it
was (none re-read or forgotten), only the jobs the new files name are chosen again; otherwise all are.
Either way the tables are what a build from scratch gives (tests/test_increment.py)."""
from __future__ import annotations

import duckdb

from analysis import sql


def build_jobs(con: duckdb.DuckDBPyConnection) -> dict[str, int]:
    mark = sql.query(con, "derived_mark_get", {"step": "jobs"})
    now = sql.query(con, "source_files_through", {"source": "slurm", "through": None}).row(0, named=True)
    same = (mark.height and sql.query(con, "source_files_through", {
        "source": "slurm", "through": mark["ingested_through"][0]})["files"][0] == mark["files"][0]
        and _exists(con, "jobs"))
    scope = {"all": not same, "through": mark["ingested_through"][0] if same else None}
    sql.run_steps(con, [("changed_jobs", scope), ("stage_jobs", None), ("stage_job_steps", None),
                        *([("drop_jobs", None)] if scope["all"] else []), ("store_jobs", {"all": scope["all"]}),
                        ("derived_mark_set", {"step": "jobs", "files": now["files"], "through": now["through"]})])
    return {"changed": "all" if scope["all"] else "new dumps",
            **{t: sql.scalar(con, f"count_{t}") for t in ("jobs", "job_steps")}}


def _exists(con: duckdb.DuckDBPyConnection, table: str) -> bool:
    return bool(con.execute("SELECT count(*) FROM duckdb_tables() WHERE schema_name = 'main' AND table_name = ?",
                            [table]).fetchall()[0][0])


def map_switch_ports(con: duckdb.DuckDBPyConnection) -> int:
    """Attach switch events to the hosts cabled to their ports; returns how many stay unmapped."""
    sql.run(con, "map_switch_ports")
    return sql.scalar(con, "count_unmapped_switch_events")
