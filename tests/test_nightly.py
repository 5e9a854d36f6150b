"""The nightly Dagster setup: daily partitions, schedule, new-file sensor, checks that degrade the report."""
import os
import re
import shutil
import time

import duckdb

import pytest
from dagster import DagsterInstance, RunRequest, SkipReason, build_sensor_context, materialize

from analysis.package_files import demo_source
from analysis.simulate.config import preset
from analysis.simulate.run import simulate
from pipelines.definitions import all_assets, all_checks, daily_assets, daily_checks, defs
from assets.resources import (CriteriaSettings, LogSources, MetricsSettings, ModelSettings, ReportSettings,
                                 TaxonomyConfig, TelemetrySettings, Warehouse)
from pipelines.schedules import new_files_sensor
from tests.conftest import REPO


def resources(src, db, out):
    return {"warehouse": Warehouse(db_path=str(db)), "sources": LogSources(source_dir=str(src)),
            "taxonomy": TaxonomyConfig(), "settings": MetricsSettings(), "report_settings": ReportSettings(out_dir=str(out)),
            "models": ModelSettings(max_drain_share=0.25),  # the small preset fails ~7x a real fleet
            "criteria": CriteriaSettings(), "telemetry_settings": TelemetrySettings(epochs=2)}  # quick models


def test_definitions_have_partitions_schedule_sensor_and_checks():
    job = defs.resolve_job_def("nightly")
    assert job.partitions_def is not None and "Daily" in str(job.partitions_def)
    schedule = defs.resolve_schedule_def("nightly_schedule")
    assert schedule.cron_schedule.startswith("0 ")  # once a day, at the configured hour
    assert defs.resolve_sensor_def("new_files_sensor") is not None
    check_names = {c.name for checks in defs.asset_checks for c in checks.check_specs}
    assert {"sources_present", "reject_rate_below_threshold", "volume_steady", "lines_accounted"} <= check_names


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    root = tmp_path_factory.mktemp("nightly")
    # 24 nodes, seed 1: the day checked has a steady telemetry volume (a dozen jobs write it: with seed 3,
    # 2024-03-08 holds 288 rows against a 7-day median of 34,374 and volume_steady rightly fails)
    simulate(preset("small", nodes=24, days=10, seed=1), root / "src")
    # the files as a night's run finds them, written well before it: a file modified within a second of being read
    # is read again by the next run (git's "racy clean" rule, analysis/ingest/one_file.py), so the sensor below
    # would count the last files the simulator wrote as new when the full run starts right after it
    hour_ago = time.time() - 3600
    for path in (root / "src").rglob("*"):
        if path.is_file():
            os.utime(path, (hour_ago, hour_ago))
    return root


def build_all(src, db, out):
    first = materialize([*all_assets, *all_checks], resources=resources(src, db, out),
                        instance=DagsterInstance.ephemeral())
    assert first.success


def run_partition(src, db, out, day):
    return materialize([*daily_assets, *daily_checks], resources=resources(src, db, out), partition_key=day,
                       instance=DagsterInstance.ephemeral(), raise_on_error=False)


def run_day(src, db, out, day):
    build_all(src, db, out)
    return run_partition(src, db, out, day)


@pytest.fixture(scope="module")
def built(cluster):
    """Every asset materialised once on the unchanged source (root/base: its warehouse, snapshot and models):
    a test that reads it copies the folder, as a night after the first full run would find it."""
    build_all(cluster / "src", cluster / "base" / "w.duckdb", cluster / "base-out")
    return cluster / "base"


def test_one_partition_in_process_writes_its_report(cluster, built, tmp_path):
    shutil.copytree(built, tmp_path / "wh")  # the full run done (the fixture's), then the day's partition
    result = run_partition(cluster / "src", tmp_path / "wh" / "w.duckdb", tmp_path / "out", "2024-03-08")
    assert result.success
    assert all(e.passed for e in result.get_asset_check_evaluations())
    html = (tmp_path / "out" / "reports" / "reliability-2024-03-08.html").read_text()
    # a back-filled day reports the data up to that day, not what came after
    shown = int(re.search(r"Data up to 2024-03-08 · ([\d,]+) job instances", html).group(1).replace(",", ""))
    con = duckdb.connect(str(tmp_path / "wh" / "w.duckdb"), read_only=True)
    total, by_day = con.execute("SELECT count(*), count(*) FILTER (WHERE submit_time < '2024-03-09') FROM jobs").fetchall()[0]
    con.close()
    assert shown == by_day < total


def banner(out, day) -> str:
    html = (out / "reports" / f"reliability-{day}.html").read_text()
    start = html.index('id="data-health"')
    return html[start:html.index("</div>", start)]


def test_a_missing_source_degrades_the_report(cluster, tmp_path):
    src = tmp_path / "src"
    shutil.copytree(cluster / "src", src)
    (src / "kernel" / "kern-2024-03-08.log").unlink()  # the collector lost a day of kernel logs
    result = run_day(src, tmp_path / "w.duckdb", tmp_path / "out", "2024-03-08")
    assert result.success  # a failed non-blocking check: Dagster's run succeeds, the check shows failed
    failed = {e.check_name: e for e in result.get_asset_check_evaluations() if not e.passed}
    assert "sources_present" in failed and "kernel" in failed["sources_present"].metadata["missing"].value
    assert failed["sources_present"].description.startswith("no rows on 2024-03-08 from kernel (rows on ")
    # the report is built, and says what it lacks
    text = banner(tmp_path / "out", "2024-03-08")
    assert "kernel/" in text and "no rows on 2024-03-08" in text and "GPU and kernel faults" in text
    done = {e.asset_key.to_user_string(): e for e in result.get_asset_materialization_events()}
    assert done["reliability_report"].materialization.metadata["data_health"].value == "degraded"


def test_sensor_runs_only_what_new_files_affect(cluster, built, tmp_path, monkeypatch):
    src = cluster / "src"  # the source the fixture's full run read: a new file is added to it, then removed
    monkeypatch.setenv("GOODPUT_SOURCE", str(src))
    monkeypatch.setenv("GOODPUT_DB", str(tmp_path / "w.duckdb"))  # no warehouse yet
    context = build_sensor_context(repository_def=defs.get_repository_def(), instance=DagsterInstance.ephemeral())
    first = new_files_sensor(context)
    assert isinstance(first, RunRequest)
    shutil.copytree(built, tmp_path / "wh")  # every asset materialised on that source
    monkeypatch.setenv("GOODPUT_DB", str(tmp_path / "wh" / "w.duckdb"))
    assert isinstance(new_files_sensor(context), SkipReason)  # everything is ingested
    extra = src / "telemetry" / "extra.csv"
    extra.write_text("time,host,metric,value\n2024-03-05T00:00:00Z,gpu0001,x,1\n")
    try:
        request = new_files_sensor(context)
    finally:
        extra.unlink()  # the module's other tests copy the source as simulated
    assert isinstance(request, RunRequest)
    selected = {k.to_user_string() for k in request.asset_selection}
    assert "telemetry" in selected and "iteration_degradation" in selected
    assert "kernel_events" not in selected and "reliability_report" not in selected


def test_a_file_full_of_rejects_degrades_the_report(cluster, built, tmp_path):
    """A night after the full run (the fixture's warehouse, copied) finds one new file, nearly all rejects."""
    src = cluster / "src"  # the source the fixture's warehouse was built from: the file is added, then removed
    shutil.copytree(built, tmp_path / "wh")
    good = '{"time": "2024-03-08T06:00:00Z", "host": "gpu0001", "check": "gpu_count", "severity": "ok", "message": "8"}\n'
    bad = src / "health" / "half-broken.jsonl"
    bad.write_text(good + "".join(f"{{not json {i}\n" for i in range(20000)))
    try:
        result = run_day(src, tmp_path / "wh" / "w.duckdb", tmp_path / "out", "2024-03-08")
    finally:
        bad.unlink()  # the module's other tests copy the source as simulated
    failed = {e.check_name: e for e in result.get_asset_check_evaluations() if not e.passed}
    assert "reject_rate_below_threshold" in failed
    # the operator reads which source, which file and why, not just a rate
    text = failed["reject_rate_below_threshold"].description
    assert text.startswith("health/: ")
    assert f"{bad.resolve()}: 20,000 of 20,001 lines rejected, mostly: " in text
    assert "health/" in banner(tmp_path / "out", "2024-03-08") and "lines read since" in banner(tmp_path / "out",
                                                                                                  "2024-03-08")


def test_daily_partitions_start_at_the_warehouses_first_day(tmp_path):
    """`make dev` on the demo's warehouse: the catalog's days begin where the data does, not in 2020."""
    import os
    import subprocess
    import sys

    from analysis import warehouse
    from analysis.derive import metrics
    from analysis.ingest.engine import ingest_directory
    from analysis.derive.taxonomy import load
    from assets.pure_builds import build_all
    db = tmp_path / "w.duckdb"
    con = warehouse.connect(db)
    ingest_directory(con, demo_source())
    build_all(con, load(), metrics.MetricsConfig())
    # the first day any source has data (a job's start, a node event): node history before the first job is judged too
    first = con.execute("SELECT min(first_time)::DATE FROM source_spans").fetchone()[0]
    assert first <= con.execute("SELECT min(end_time)::DATE FROM jobs").fetchone()[0]
    con.close()
    probe = "from assets.nightly import daily_partitions as p; print(p.start.date())"
    env = {k: v for k, v in os.environ.items() if k != "GOODPUT_START_DATE"}
    start = lambda **extra: subprocess.run([sys.executable, "-c", probe], cwd=REPO, capture_output=True, text=True,  # noqa: E731
                                           env={**env, **extra}, timeout=120, check=True).stdout.strip()
    assert start(GOODPUT_DB=str(db)) == str(first)
    assert start(GOODPUT_DB=str(db), GOODPUT_START_DATE="2023-06-01") == "2023-06-01"  # an explicit start wins
    assert start(GOODPUT_DB=str(tmp_path / "none.duckdb")) == "2020-01-01"  # no warehouse yet
    assert not (tmp_path / "none.duckdb").exists()  # reading the start does not create one
