"""Models on a cadence (issue 22): the telemetry detector is loaded and only scores between retrains;
it is retrained when it is too old, when its input definition or metric set changed, or on demand;
scoring new jobs in increments gives the tables scoring them all at once with the same model gives."""
from __future__ import annotations

import json
import shutil
from datetime import datetime, timedelta
from pathlib import Path

import numpy as np
import polars as pl
import pytest

from analysis import warehouse
from analysis.nodes.cadence import Cadence
from analysis.simulate.telemetry import TelemetryJob, job_frame
from analysis.telemetry import run as telemetry_run
from analysis.telemetry.detect import DetectConfig

CFG = DetectConfig()
T0 = datetime(2024, 3, 1)
JOBS_DDL = ("CREATE TABLE IF NOT EXISTS jobs (job_id VARCHAR, instance INTEGER, state VARCHAR, "
            "start_time TIMESTAMP, end_time TIMESTAMP, nodes VARCHAR[])")
TABLES = ("telemetry_jobs", "machine_alerts", "link_suspects", "node_events WHERE source = 'telemetry'")


def make_job(i: int, day: float, state: str = "COMPLETED", hosts: int = 6, drop: str | None = None,
             extra: str | None = None, seed: int = 0) -> tuple[dict, pl.DataFrame]:
    """Job i: ``hosts`` machines for 20 minutes from T0 + day; a FAILED job has a drifting machine; an
    odd one also reports a per-peer delay, slow on one link (link_suspects). ``drop``: a metric its
    exporters do not report; ``extra``: one more metric they do."""
    rng = np.random.default_rng(seed * 1000 + i)
    names = [f"c{h:02d}" for h in range(hosts)]  # the same machines run every job
    start = T0 + timedelta(days=day)
    end = start + timedelta(minutes=20)
    bad = names[i % hosts] if state == "FAILED" else None
    job = TelemetryJob(str(1000 + i), names, start, end, bad, end - timedelta(minutes=6) if bad else None)
    rows, _ = job_frame(job, rng, window_minutes=20)
    rows = rows.select("time", "host", "metric", "value").with_columns(pl.col("time").dt.replace_time_zone(None))
    if i % 2:
        at = rows["time"].min()
        rows = pl.concat([rows, pl.DataFrame(
            [(at, s, f"rdma_write_delay_us@{d}", 60.0 if (s, d) == (names[1], names[4]) else 20.0 + (k % 3))
             for k, (s, d) in enumerate((s, d) for s in names for d in names if s != d)],
            schema=rows.schema, orient="row")])
    if drop:
        rows = rows.filter(pl.col("metric") != drop)
    if extra:
        rows = pl.concat([rows, rows.filter(pl.col("metric") == rows["metric"][0]).with_columns(
            metric=pl.lit(extra), value=pl.col("value") * 0.5)])
    meta = {"job_id": job.job_id, "instance": 0, "state": state, "start_time": start, "end_time": end, "nodes": names}
    return meta, rows


def add(con, jobs: list[tuple[dict, pl.DataFrame]]) -> None:
    con.execute(JOBS_DDL)
    table = pl.DataFrame([j for j, _ in jobs], schema={"job_id": pl.Utf8, "instance": pl.Int32, "state": pl.Utf8,
                                                      "start_time": pl.Datetime("us"), "end_time": pl.Datetime("us"),
                                                      "nodes": pl.List(pl.Utf8)})
    rows = pl.concat([r.with_columns(file=pl.lit(f"job-{j['job_id']}"), line_no=pl.int_range(pl.len(), dtype=pl.Int64))
                      for j, r in jobs])
    con.register("new_jobs", table)
    con.register("new_rows", rows)
    con.execute("INSERT INTO jobs BY NAME SELECT * FROM new_jobs")
    con.execute("INSERT INTO telemetry BY NAME SELECT * FROM new_rows")
    con.unregister("new_jobs")
    con.unregister("new_rows")


def first_jobs():
    """Five completed jobs and a failed one over two days."""
    return [make_job(i, i * 0.4, "FAILED" if i == 4 else "COMPLETED") for i in range(6)]


def later_jobs(day: float = 3.0, n: int = 3, first: int = 10, **kw):
    return [make_job(first + i, day + 0.3 * i, "FAILED" if i == 1 else "COMPLETED", **kw) for i in range(n)]


def detect(con, db: Path, **kw):
    args = {"epochs": 2, "lookback_days": 9.0, "cadence": Cadence(scope=db.name), **kw}
    return telemetry_run.run(con, CFG, db.parent / "models", **args)


def tables(con) -> list[pl.DataFrame]:
    return [con.sql(f"SELECT * FROM {t} ORDER BY ALL").pl() for t in TABLES]


def artifact(db: Path) -> tuple[Path, dict]:
    (path,) = (db.parent / "models").glob("minder-*.json")
    return path, json.loads(path.read_text())


@pytest.fixture(scope="module")
def scored(tmp_path_factory):
    """A warehouse scored in two increments: the first trains, the second (three days later) loads."""
    db = tmp_path_factory.mktemp("cadence") / "w.duckdb"
    con = warehouse.connect(db)
    add(con, first_jobs())
    first = detect(con, db)
    json_path, meta = artifact(db)
    stamp = (json_path.stat().st_mtime_ns, json_path.with_suffix(".pt").stat().st_mtime_ns)
    add(con, later_jobs())
    second = detect(con, db)
    yield con, db, first, second, stamp
    con.close()


def test_a_rerun_with_a_fresh_model_loads_it_and_scores_only_new_jobs(scored):
    con, db, first, second, stamp = scored
    assert first.model.trained and first.model.reason == "no saved model" and first.jobs == 6
    assert not second.model.trained and second.model.reason.startswith("saved model is ")
    assert second.model.age_days == pytest.approx(1.6) and second.model_version == first.model_version
    json_path, meta = artifact(db)  # one artifact, untouched
    assert (json_path.stat().st_mtime_ns, json_path.with_suffix(".pt").stat().st_mtime_ns) == stamp
    assert sorted(second.judged) == ["1010", "1011", "1012"] and second.model.cpu_s.get("train") is None
    assert con.sql("SELECT count(*) FROM telemetry_jobs").fetchall()[0][0] == 9
    # nothing new: nothing scored, nothing trained
    third = detect(con, db)
    assert not third.model.trained and third.jobs == 0
    assert meta["fingerprint"] and meta["data_to"] and len(meta["metric_set"]) == 8 == len(meta["metrics"])


def test_scoring_in_increments_equals_scoring_everything_at_once(scored, tmp_path):
    """The same saved model, every job at once in a fresh warehouse: the same tables."""
    con, db, first, _, _ = scored
    once = tmp_path / db.name
    shutil.copytree(db.parent / "models", tmp_path / "models")
    fresh = warehouse.connect(once)
    add(fresh, first_jobs() + later_jobs())
    result = detect(fresh, once)
    assert not result.model.trained and result.model_version == first.model_version and result.jobs == 9
    for a, b in zip(tables(con), tables(fresh)):
        assert a.height and a.equals(b), (a, b)
    assert tables(con)[1]["method"].is_in(["minder"]).any()  # alerts to compare, not empty tables
    fresh.close()


def _copy(scored, tmp_path) -> tuple:
    con, db, *_ = scored
    con.execute("CHECKPOINT")
    target = tmp_path / db.name
    shutil.copy(db, target)
    shutil.copytree(db.parent / "models", tmp_path / "models")
    return warehouse.connect(target), target


def test_an_old_model_is_retrained_and_rescores_the_recent_jobs(scored, tmp_path):
    con, db = _copy(scored, tmp_path)
    add(con, later_jobs(day=11.0, n=2, first=30))  # the data moved on eight days past the model's
    result = detect(con, db)
    assert result.model.trained and "days old (retrain_after_days 7)" in result.model.reason
    assert result.model.cpu_s["train"] > 0
    # the new jobs, and the jobs that ended within lookback_days of the latest; older verdicts stay
    assert sorted(result.judged) == ["1010", "1011", "1012", "1030", "1031"]
    versions = dict(con.sql("SELECT job_id, model_version FROM telemetry_jobs").fetchall())
    assert versions["1010"] == versions["1030"] == result.model_version != versions["1000"]
    assert len(list((db.parent / "models").glob("minder-*.json"))) == 2
    con.close()


def test_a_changed_metric_set_or_definition_retrains(scored, tmp_path):
    con, db = _copy(scored, tmp_path)
    # a failed job without a metric does not change what training would use
    add(con, [make_job(20, 3.5, "FAILED", drop="DCGM_FI_DEV_SM_CLOCK")])
    assert not detect(con, db).model.trained
    # a completed one does: the metrics every training job carries lose it
    add(con, [make_job(21, 3.8, "COMPLETED", drop="DCGM_FI_DEV_SM_CLOCK")])
    result = detect(con, db)
    assert result.model.trained and result.model.reason == "metric set changed: -DCGM_FI_DEV_SM_CLOCK"
    _, meta = max(((p, json.loads(p.read_text())) for p in (db.parent / "models").glob("minder-*.json")),
                  key=lambda pm: pm[1]["trained_at"])
    assert "DCGM_FI_DEV_SM_CLOCK" not in meta["metrics"]
    assert not detect(con, db).model.trained  # the same change does not retrain twice
    changed = detect(con, db, epochs=3)  # a hyper-parameter
    assert changed.model.trained and changed.model.reason.startswith("input definition changed")
    con.close()


def test_retrain_on_demand_from_the_command_line(scored, tmp_path):
    from click.testing import CliRunner

    from pipelines.cli import main

    con, db = _copy(scored, tmp_path)
    con.close()
    _, before = artifact(db)
    out = CliRunner().invoke(main, ["models", "--db", str(db), "--retrain", "telemetry"])
    assert out.exit_code == 0, out.output
    assert "Telemetry detector: trained (retrain asked for)" in out.output
    metas = [json.loads(p.read_text()) for p in (db.parent / "models").glob("minder-*.json")]
    assert max(m["trained_at"] for m in metas) >= before["trained_at"] and len(metas) == 2  # 30 epochs: another


def test_the_asset_says_whether_it_trained_or_loaded_the_detector(scored, tmp_path):
    from dagster import DagsterInstance, materialize

    from assets.telemetry import machine_alerts
    from assets.resources import TelemetrySettings, Warehouse

    con, db = _copy(scored, tmp_path)
    add(con, later_jobs(day=4.0, n=1, first=40))
    con.close()
    meta = []
    for days in (None, None, 30):  # the same settings twice, then another retrain_after_days
        res = {"warehouse": Warehouse(db_path=str(db)),
               "telemetry_settings": TelemetrySettings(epochs=3, lookback_days=9.0, retrain_after_days=days)}
        run = materialize([machine_alerts], resources=res, instance=DagsterInstance.ephemeral())
        (event,) = run.get_asset_materialization_events()
        meta.append({k: v.value for k, v in event.materialization.metadata.items()})
    # the settings' definition differs from the saved model's (3 epochs, not 2): trained
    assert meta[0]["detector_model"] == "trained" and meta[0]["detector_model_age_days"] == 0
    assert meta[0]["detector_model_reason"].startswith("input definition changed") and meta[0]["detector_train_cpu_s"] > 0
    assert meta[1]["unchanged"] and meta[1]["detector_model"] == "trained"  # not run again: the last build's metadata
    # the step runs (its settings changed), the detector's definition did not: loaded, nothing new to score
    assert not meta[2].get("unchanged") and meta[2]["detector_model"] == "loaded" and meta[2]["jobs"] == 0
    assert "detector_train_cpu_s" not in meta[2] and meta[2]["detector_model_age_days"] == 0
    assert meta[2]["detector_model_version"] == meta[0]["detector_model_version"] == meta[0]["model_version"]


def test_cadence_decisions():
    from analysis.nodes.cadence import decide

    day = datetime(2024, 3, 10)
    saved = ({"fingerprint": "f", "data_to": "2024-03-05T00:00:00", "version": "v"}, Path("m/x-v.json"))
    cad = Cadence(7)
    assert not decide("lemon", saved, "f", day, cad, Path("m")).trained  # 5 days old
    assert decide("lemon", saved, "f", day + timedelta(days=2), cad, Path("m")).reason == \
        "saved model is 7.0 days old (retrain_after_days 7)"
    assert decide("lemon", saved, "g", day, cad, Path("m")).reason.startswith("input definition changed")
    assert decide("lemon", saved, "f", day, Cadence(7, frozenset({"all"})), Path("m")).reason == "retrain asked for"
    assert not decide("lemon", saved, "f", day, Cadence(7, frozenset({"incident"})), Path("m")).trained
    assert "after this run's end" in decide("lemon", saved, "f", datetime(2024, 3, 1), cad, Path("m")).reason
    assert decide("lemon", None, "f", day, cad, Path("m")).reason == "no saved model"
    assert decide("lemon", ({"version": "v"}, Path("m/x.json")), "f", day, cad, Path("m")).reason.endswith(
        "predates fingerprints")
    assert decide("lemon", saved, "f", day, Cadence(0), Path("m")).trained  # 0: every run
    assert decide("lemon", saved, "f", day, cad, None).trained  # nowhere to save: trained for the run


def test_retrain_after_days_from_the_environment(monkeypatch):
    from assets.resources import ModelSettings, TelemetrySettings, retrain_after_days_default

    monkeypatch.setenv("GOODPUT_RETRAIN_AFTER_DAYS", "0")
    assert TelemetrySettings().cadence("/x/w.duckdb") == Cadence(0.0, frozenset(), "w.duckdb")
    assert ModelSettings().config("src", "/x/w.duckdb").cadence.retrain_after_days == 0.0
    assert TelemetrySettings(retrain_after_days=3).cadence("/x/w.duckdb").retrain_after_days == 3.0
    monkeypatch.setenv("GOODPUT_RETRAIN_AFTER_DAYS", "weekly")  # a bad value fails the model step that reads it
    with pytest.raises(ValueError, match="GOODPUT_RETRAIN_AFTER_DAYS must be a number of days, got 'weekly'"):
        TelemetrySettings().cadence("/x/w.duckdb")
    monkeypatch.delenv("GOODPUT_RETRAIN_AFTER_DAYS")
    assert retrain_after_days_default() == 7.0


def test_a_saved_model_that_no_longer_loads_is_retrained(tmp_path):
    """A models/ folder written by an older goodput, whose pickled classes have moved since (analysis.survival
    became analysis.nodes.survival), is retrained from, not crashed on (it withheld node_actions at 2,000 nodes)."""
    import pickle

    from analysis.nodes import cadence

    meta = {"version": "v1", "data_to": "2024-03-01T00:00:00"}
    old = tmp_path / "incident-v1.json"
    old.with_suffix(".pkl").write_bytes(b"canalysis.survival\nCoxTime\n.")  # a class of a module that is gone
    loading = cadence.ModelState("incident", False, "saved model is 1.0 days old", "v1", 1.0, old)
    model, state = cadence.load_saved("incident", loading, (meta, old))
    assert model is None and state.trained and "incident-v1.pkl no longer loads (ModuleNotFoundError" in state.reason
    old.with_suffix(".pkl").write_bytes(pickle.dumps({"fitted": [1, 2]}))
    assert cadence.load_saved("incident", loading, (meta, old)) == ({"fitted": [1, 2]}, loading)
    training = cadence.ModelState("incident", True, "no saved model")
    assert cadence.load_saved("incident", training, None) == (None, training)
