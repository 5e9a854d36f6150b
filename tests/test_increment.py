"""A one-day increment (yesterday's warehouse plus today's files) gives the same tables as a fresh run
over the same files: what the nightly keeps from run to run never differs from what it would rebuild."""
from __future__ import annotations

import json

import duckdb
import pytest

from analysis.simulate.config import preset
from analysis.simulate.increment import add_held_out, hold_out_last_day
from analysis.simulate.run import simulate
from pipelines.runner import run_pipeline

# Columns that say when something happened on this machine, not what the data is.
WHEN_RUN = {"ingested_at", "verified_at", "mtime_ns", "built_at", "trained_at", "since", "published_at",
            "generated_at", "created_at"}
# Bookkeeping of runs, not data: which steps were withheld, what each run built.
RUN_TABLES = {"withheld_steps", "asset_inputs", "asset_checks_recorded", "derived_marks"}
# Day partitions: each run adds the partition of its last day, so the nightly also holds yesterday's,
# which a fresh run never built. Compared on the days both hold.
PARTITIONED = {"daily_source_volume": "day"}


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    with pytest.MonkeyPatch.context() as mp:
        # models retrained every run, as a fresh run trains them: then their tables are comparable too (with
        # the nightly cadence an increment scores with the model of an earlier day, by design)
        mp.setenv("GOODPUT_RETRAIN_AFTER_DAYS", "0")
        yield _runs(tmp_path_factory.mktemp("increment"))


def _runs(root):
    simulate(preset("small", nodes=16, days=6, seed=1), root / "sim")  # seed 1: job logs on the last day
    held = hold_out_last_day(root / "sim", root / "src")
    assert held, "the last day has files"
    first = run_pipeline(root / "src", root / "nightly.duckdb", root / "out-nightly")
    assert first.report_path is not None, first.report()
    add_held_out(root / "sim", root / "src", held)
    increment = run_pipeline(root / "src", root / "nightly.duckdb", root / "out-nightly")
    fresh = run_pipeline(root / "src", root / "fresh.duckdb", root / "out-fresh")
    assert increment.exit_code == fresh.exit_code == 0, increment.report() + fresh.report()
    return root


def _tables(con, db: str) -> dict[str, list[str]]:
    rows = con.execute("SELECT table_name, column_name FROM information_schema.columns "
                       "WHERE table_catalog = ? AND table_schema = 'main' ORDER BY table_name, ordinal_position",
                       [db]).fetchall()
    tables: dict[str, list[str]] = {}
    for table, column in rows:
        tables.setdefault(table, []).append(column)
    return tables


def test_a_one_day_increment_gives_the_tables_of_a_fresh_run(runs):
    con = duckdb.connect()
    con.execute(f"ATTACH '{runs / 'nightly.duckdb'}' AS nightly (READ_ONLY)")
    con.execute(f"ATTACH '{runs / 'fresh.duckdb'}' AS fresh (READ_ONLY)")
    nightly, fresh = _tables(con, "nightly"), _tables(con, "fresh")
    assert nightly.keys() == fresh.keys()
    compared, differ = 0, {}
    for table, columns in sorted(nightly.items()):
        if table in RUN_TABLES:
            continue
        assert columns == fresh[table], table
        cols = ", ".join(f'"{c}"' for c in columns if c not in WHEN_RUN)
        key = PARTITIONED.get(table)
        where = f"WHERE {key} IN (SELECT {key} FROM fresh.{table})" if key else ""
        only = [con.execute(f"SELECT count(*) FROM (SELECT {cols} FROM {a}.{table} {where} EXCEPT ALL "
                            f"SELECT {cols} FROM {b}.{table} {where})").fetchall()[0][0]
                for a, b in (("nightly", "fresh"), ("fresh", "nightly"))]
        n = con.execute(f"SELECT count(*) FROM fresh.{table}").fetchall()[0][0]
        compared += n
        if any(only):
            differ[table] = (only, n)
    assert not differ, f"rows only in the nightly / only in the fresh warehouse (of n): {differ}"
    assert compared > 10_000  # the comparison covered real data


NEW_DAY = """
WITH day AS (SELECT date_trunc('day', max(end_time)) AS d FROM jobs),
ended AS (SELECT job_id, instance, state FROM jobs, day WHERE end_time >= d)
SELECT (SELECT count(*) FROM ended WHERE state = 'FAILED'),
       (SELECT count(*) FROM classified_events, day WHERE event_time >= d AND job_id IS NULL),
       (SELECT count(*) FROM node_events WHERE source = 'app' AND job_id IN (SELECT job_id FROM ended)),
       (SELECT count(*) FROM failure_attribution WHERE is_primary AND file IS NOT NULL
                                                   AND (job_id, instance) IN (SELECT (job_id, instance) FROM ended))
"""


def test_the_new_day_takes_the_extended_paths(runs):
    """The new day brings what the builds that extend rather than rebuild must get right (failed jobs, node
    events, job logs, causes found in them), and the nightly extended those builds."""
    con = duckdb.connect(str(runs / "nightly.duckdb"), read_only=True)
    failed, events, log_events, explained = con.execute(NEW_DAY).fetchall()[0]
    assert failed and events and log_events and explained, (failed, events, log_events, explained)
    outcome = {a: json.loads(o) for a, o in con.execute(
        "SELECT asset, outcome FROM asset_inputs WHERE asset IN ('jobs', 'job_log_events')").fetchall()}
    con.close()
    assert outcome["jobs"]["changed"] == "new dumps"
    assert outcome["job_log_events"]["built"] == "changed jobs"
