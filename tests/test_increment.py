"""A one-day increment (yesterday's warehouse plus today's files) gives the same tables as a fresh run
over the same files: what the nightly keeps from run to run never differs from what it would rebuild."""
from __future__ import annotations

import json
import shutil

import duckdb
import pytest

from analysis import warehouse
from analysis.nodes import cadence
from analysis.nodes import node_models
from analysis.simulate.config import preset
from analysis.simulate.increment import add_held_out, hold_out_last_day
from analysis.simulate.run import simulate
from analysis.telemetry import train
from assets.resources import ModelSettings
from pipelines.runner import run_pipeline
from tests.shared import quick_telemetry, shared_build

# Columns that say when something happened on this machine, not what the data is.
WHEN_RUN = {"ingested_at", "verified_at", "mtime_ns", "built_at", "trained_at", "since", "published_at",
            "generated_at", "created_at"}
# Bookkeeping of runs, not data: which steps were withheld, what each run built.
RUN_TABLES = {"withheld_steps", "asset_inputs", "asset_checks_recorded", "derived_marks"}
# Kept per day or per as-of, by design: each run adds the partition of its last day, and the node models'
# scores, validation plan and evaluation those of their as-of (midnight after the data), so the nightly also
# holds yesterday's, which a fresh run never built. Compared on what both hold (what is kept of yesterday:
# test_node_scores_keep_each_as_of).
PARTITIONED = {"daily_source_volume": "day", **{t: "as_of" for t in ("lemon_scores", "node_risk", "validation_plan",
                                                                       "model_evaluation", "repeat_offenders",
                                                                       "node_action_history")}}
# The node lifecycle also holds goodput's decision at every as-of a run took (node_action_history): the nightly's
# yesterday is not a fresh run's. Its steps from the records (drains, tickets, validations, returns, escalations)
# are compared, without their numbering; node_lifecycle_now is a view over it (its decision column is yesterday's).
FROM_RECORDS = {"node_lifecycle": "WHERE source <> 'goodput' OR state = 'escalated'"}
DECIDED_VIEWS = {"node_lifecycle_now"}
# Simulations whose increment once differed from a fresh run: 1 brings job logs on the last day (the builds
# that extend rather than rebuild); 3 has failed jobs blamed on a machine before the last day (the
# detector's metric ranking, learned at training from the previous run's attribution, which a fresh run
# does not have yet: now ranked after this run's); 7's held-out day moves the node models' as-of.
SEEDS = (1, 3, 7)


def runs_of(tmp_path_factory, seed: int):
    """The nightly (first run, then the held-out last day added) and a fresh run, built once per test run."""
    def build(root):
        # models retrained every run, as a fresh run trains them: then their tables are comparable too (with
        # the nightly cadence an increment scores with the model of an earlier day, by design); the telemetry
        # detector trained on few epochs (what it finds is not judged here, only that both runs agree)
        with pytest.MonkeyPatch.context() as mp, quick_telemetry():
            mp.setenv("GOODPUT_RETRAIN_AFTER_DAYS", "0")
            _runs(root, seed)
    return shared_build(tmp_path_factory, f"increment_s{seed}", build)[0]


@pytest.fixture(scope="module", params=SEEDS, ids=[f"seed{s}" for s in SEEDS])
def runs(request, tmp_path_factory):
    return runs_of(tmp_path_factory, request.param)


def _runs(root, seed: int):
    simulate(preset("small", nodes=16, days=6, seed=seed), root / "sim")
    held = hold_out_last_day(root / "sim", root / "src")
    assert held, "the last day has files"
    first = run_pipeline(root / "src", root / "nightly.duckdb", root / "out-nightly")
    assert first.report_path is not None, first.report()
    add_held_out(root / "sim", root / "src", held)
    increment = run_pipeline(root / "src", root / "nightly.duckdb", root / "out-nightly")
    fresh = run_pipeline(root / "src", root / "fresh.duckdb", root / "out-fresh")
    assert increment.exit_code == fresh.exit_code == 0, increment.report() + fresh.report()


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
        if table in RUN_TABLES or table in DECIDED_VIEWS:
            continue
        assert columns == fresh[table], table
        cols = ", ".join(f'"{c}"' for c in columns if c not in WHEN_RUN and not (table in FROM_RECORDS and c == "step"))
        key = PARTITIONED.get(table)
        where = f"WHERE {key} IN (SELECT {key} FROM fresh.{table})" if key else FROM_RECORDS.get(table, "")
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


def test_the_new_day_takes_the_extended_paths(tmp_path_factory):
    """The new day brings what the builds that extend rather than rebuild must get right (failed jobs, node
    events, job logs, causes found in them), and the nightly extended those builds."""
    con = duckdb.connect(str(runs_of(tmp_path_factory, 1) / "nightly.duckdb"), read_only=True)
    failed, events, log_events, explained = con.execute(NEW_DAY).fetchall()[0]
    assert failed and events and log_events and explained, (failed, events, log_events, explained)
    outcome = {a: json.loads(o) for a, o in con.execute(
        "SELECT asset, outcome FROM asset_inputs WHERE asset IN ('jobs', 'job_log_events')").fetchall()}
    con.close()
    assert outcome["jobs"]["changed"] == "new dumps"
    assert outcome["job_log_events"]["built"] == "changed jobs"


def test_the_detector_ranks_its_metrics_on_this_runs_attribution(tmp_path_factory):
    """Minder's metric priority is learned after attribution, from the windows it labels in this run (seed 3:
    failed jobs blamed on a machine by other evidence): the nightly's detector, trained before the new day's
    attribution existed, and the fresh run's hold the same learned order, and their alerts follow it."""
    root = runs_of(tmp_path_factory, 3)
    orders = {}
    for db in ("nightly", "fresh"):
        con = duckdb.connect(str(root / f"{db}.duckdb"), read_only=True)
        version = con.sql("SELECT DISTINCT model_version FROM telemetry_jobs").fetchall()
        meta, _ = cadence.latest(root / "models", "minder", f"{db}.duckdb")
        assert version == [(meta["version"],)] and meta["ranked"], (version, meta.get("ranked"))
        ranks = con.sql("SELECT DISTINCT metric, metric_rank FROM machine_alerts WHERE method = 'minder'").fetchall()
        con.close()
        assert ranks and all(rank == meta["priority"].index(metric) for metric, rank in ranks), ranks
        orders[db] = meta["priority"]
    assert orders["nightly"] == orders["fresh"] != train.default_priority(orders["fresh"])  # labels ranked them


def test_node_scores_keep_each_as_of(tmp_path_factory, tmp_path):
    """lemon_scores and node_risk keep one set of rows per as-of: seed 7's held-out day moves the end of the
    data past a midnight, so the nightly holds yesterday's scores beside today's, and they are what the node
    models give as of that day over all the files (`goodput models --as-of`): kept, not stale."""
    root = runs_of(tmp_path_factory, 7)
    con = duckdb.connect()
    con.execute(f"ATTACH '{root / 'nightly.duckdb'}' AS nightly (READ_ONLY)")
    con.execute(f"ATTACH '{root / 'fresh.duckdb'}' AS fresh (READ_ONLY)")
    kept = con.sql("SELECT DISTINCT as_of FROM nightly.lemon_scores EXCEPT SELECT as_of FROM fresh.lemon_scores").fetchall()
    assert len(kept) == 1, kept
    shutil.copyfile(root / "fresh.duckdb", tmp_path / "asof.duckdb")
    cfg = ModelSettings(retrain_after_days=0).config(str(root / "src"), str(tmp_path / "asof.duckdb"))
    w = warehouse.connect(tmp_path / "asof.duckdb")
    node_models.run_models(w, cfg, as_of=kept[0][0])
    w.close()
    con.execute(f"ATTACH '{tmp_path / 'asof.duckdb'}' AS at_day (READ_ONLY)")
    for table in ("lemon_scores", "node_risk"):
        counts = [con.execute(f"SELECT count(*) FROM (SELECT * FROM {a}.{table} WHERE as_of = $1 EXCEPT ALL "
                              f"SELECT * FROM {b}.{table} WHERE as_of = $1)", [kept[0][0]]).fetchall()[0][0]
                  for a, b in (("nightly", "at_day"), ("at_day", "nightly"))]
        n = con.execute(f"SELECT count(*) FROM at_day.{table} WHERE as_of = $1", [kept[0][0]]).fetchall()[0][0]
        assert counts == [0, 0] and n, (table, counts, n)
