"""End to end: the Dagster code location and the CLI on the demo cluster."""
import re
import shutil

import duckdb
import pytest
from click.testing import CliRunner
from dagster import DagsterInstance, Definitions, materialize

from analysis import warehouse
from assets.graph import found, tables_of
from pipelines.cli import DEMO_SOURCE, main
from pipelines.definitions import all_assets, all_checks, daily_assets, defs
from assets.resources import (CriteriaSettings, LogSources, MetricsSettings, ModelSettings, ReportSettings,
                                 TaxonomyConfig, TelemetrySettings, Warehouse)
from tests.shared import quick_telemetry, record_tables_written

# What the machinery around every step writes besides the step's own tables: its build record (assets/unchanged.py),
# a withheld step's reason (assets/degrade.py), the marks of a step that extends its tables (analysis/derive/marks.py),
# the schema's digest (analysis/warehouse.py).
MACHINERY = {"asset_inputs", "withheld_steps", "derived_marks", "goodput_schema"}
TABLES = ("jobs", "job_steps", "sacct_records", "node_events", "node_state_periods", "benchmark_results",
          "telemetry", "tickets", "topology", "rejects", "ingested_files")


def table_counts(db):
    con = duckdb.connect(str(db), read_only=True)
    try:
        return {t: con.execute(f"SELECT count(*) FROM {t}").fetchall()[0][0] for t in TABLES}
    finally:
        con.close()


def test_definitions_load():
    Definitions.validate_loadable(defs)
    keys = {k.to_user_string() for k in defs.resolve_asset_graph().get_all_asset_keys()}
    assert {"sacct_records", "kernel_events", "switch_events", "jobs", "node_events", "telemetry"} <= keys
    assert defs.resolve_job_def("nightly") is not None


def resources_for(source, db, tmp_path) -> dict:
    return {"warehouse": Warehouse(db_path=str(db)), "sources": LogSources(source_dir=str(source)),
            "taxonomy": TaxonomyConfig(), "settings": MetricsSettings(), "models": ModelSettings(),
            "criteria": CriteriaSettings(), "telemetry_settings": TelemetrySettings(),
            "report_settings": ReportSettings(out_dir=str(tmp_path / "out"))}


def test_materialize_all_assets_in_process(tmp_path):
    db = tmp_path / "w.duckdb"
    resources = resources_for(DEMO_SOURCE, db, tmp_path)
    instance = DagsterInstance.ephemeral()
    written = record_tables_written(instance, db, {a.key.to_user_string() for a in found()[0]})
    result = materialize([*all_assets, *all_checks], resources=resources, instance=instance)
    assert result.success
    evaluations = result.get_asset_check_evaluations()
    assert len(evaluations) == len(all_checks) and all(e.passed for e in evaluations)
    counts = table_counts(db)
    assert all(counts[t] > 0 for t in TABLES if t != "rejects"), counts
    con = duckdb.connect(str(db), read_only=True)
    # the requeued job 1001 has two instances; its NODE_FAIL instance ran on gpu[001-004]
    rows = con.execute("SELECT instance, state, nodes FROM jobs WHERE job_id = '1001' ORDER BY instance").fetchall()
    assert rows == [(0, "NODE_FAIL", ["gpu001", "gpu002", "gpu003", "gpu004"]),
                    (1, "COMPLETED", ["gpu001", "gpu002", "gpu004", "gpu006"])]
    # the XID 79 that killed it, and the switch flap mapped through the cabling map to gpu005
    xid = con.execute("SELECT host, device FROM node_events WHERE kind = 'xid' AND code = '79'").fetchall()
    assert ("gpu003", "0000:b3:00") in xid
    flap = con.execute("SELECT DISTINCT host FROM node_events WHERE source = 'switch' AND kind = 'link_down'").fetchall()
    assert flap == [("gpu005",)]
    con.close()
    day = warehouse.read_scalar(db, "ops/last_data_day").isoformat()
    # the day's steps that declare tables (the report writes its file only, and test_nightly.py builds it)
    daily = materialize(daily_assets, selection=[a.key for a in daily_assets if tables_of(a)], resources=resources,
                        partition_key=day, instance=instance)
    assert daily.success
    skipped = {e.asset_key.to_user_string() for e in result.get_asset_materialization_events()
               if "skipped" in e.materialization.metadata}  # the demo has no telemetry job to judge
    each_step_writes_only_the_tables_it_declares(written, skipped, db)


def each_step_writes_only_the_tables_it_declares(written: dict[str, set[str]], skipped: set[str], db) -> None:
    """The catalog's "goodput/tables" (assets/graph.py ``writes``) is what each step changed in the warehouse."""
    con = duckdb.connect(str(db), read_only=True)
    try:
        existing = {r[0] for r in con.execute("SELECT table_name FROM duckdb_tables() UNION ALL "
                                              "SELECT view_name FROM duckdb_views() WHERE NOT internal").fetchall()}
    finally:
        con.close()
    for a in found()[0]:
        key, declared = a.key.to_user_string(), set(tables_of(a) or ())
        assert key in skipped or declared <= existing, f"{key} declares tables not in the warehouse: {declared - existing}"
        undeclared = written.get(key, set()) - MACHINERY - declared
        assert not undeclared, f"{key} writes {sorted(undeclared)}: declare them (metadata=writes(...): assets/graph.py)"


def test_cli_run_twice_is_idempotent_and_prints_summary(tmp_path, caplog):
    runner = CliRunner()
    db, out = tmp_path / "w.duckdb", tmp_path / "out"
    first = runner.invoke(main, ["run", "--source", str(DEMO_SOURCE), "--db", str(db), "--out", str(out), "-q"])
    assert first.exit_code == 0, first.output
    assert "kernel" in first.output and "All assets materialized" in first.output
    progress = lambda: [r.getMessage() for r in caplog.records if r.name == "goodput.progress"]  # noqa: E731
    assert progress() == []  # -q: the summary only
    before = table_counts(db)
    second = runner.invoke(main, ["run", "--source", str(DEMO_SOURCE), "--db", str(db), "--out", str(out)])
    assert second.exit_code == 0, second.output
    assert table_counts(db) == before
    # without -q every asset says when it starts (stderr), the ingest first and the report last
    started = [m.split()[1] for m in progress() if m.strip().startswith("building ")]
    assert {"sacct_records", "jobs", "failure_attribution", "node_actions", "reliability_report"} <= set(started)
    assert started.index("sacct_records") < started.index("jobs") < started.index("reliability_report")
    assert all(re.fullmatch(r"  \S+ (done|FAILED) after \d+\.\d s", m) for m in progress() if "after" in m)
    assert (out / "ingest_summary.csv").exists()

    result = runner.invoke(main, ["sql", "--db", str(db), "--csv", "SELECT job_id, state FROM jobs WHERE job_id = '1003'"])
    assert result.exit_code == 0 and result.output.splitlines() == ["job_id,state", "1003,OUT_OF_MEMORY"]
    result = runner.invoke(main, ["sql", "--db", str(db), "SELECT * FROM no_such_table"])
    assert result.exit_code != 0 and "no_such_table" in result.output and "Traceback" not in result.output


@pytest.mark.parametrize("case", ["missing", "empty"])
def test_cli_run_rejects_missing_or_empty_source(tmp_path, case):
    src = tmp_path / "src"
    if case == "empty":
        src.mkdir()
    result = CliRunner().invoke(main, ["run", "--source", str(src), "--db", str(tmp_path / "w.duckdb")])
    assert result.exit_code != 0
    assert ("does not exist" if case == "missing" else "holds no files") in result.output


def test_cli_run_reports_unknown_files(tmp_path):
    src = tmp_path / "src"
    shutil.copytree(DEMO_SOURCE, src)
    (src / "mystery").mkdir()
    (src / "mystery" / "notes.txt").write_text("what is this\n")
    result = CliRunner().invoke(main, ["run", "--source", str(src), "--db", str(tmp_path / "w.duckdb"),
                                       "--out", str(tmp_path / "out"), "-q"])
    assert result.exit_code == 0, result.output
    assert "unrecognised" in result.output and "notes.txt" in result.output


def test_dagster_cli_loads_code_location():
    import subprocess
    import sys
    from pathlib import Path

    dagster = Path(sys.executable).with_name("dagster")
    done = subprocess.run([str(dagster), "definitions", "validate", "-w", "workspace.yaml"], capture_output=True,
                          text=True, cwd=Path(__file__).resolve().parents[1], timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]


def test_cli_rejects_bad_options_clearly(tmp_path):
    db = str(tmp_path / "w.duckdb")
    bad_tz = CliRunner().invoke(main, ["run", "--source", str(DEMO_SOURCE), "--db", db, "--tz", "Mars/Olympus"])
    assert bad_tz.exit_code != 0 and "unknown time zone" in bad_tz.output
    bad_boot = CliRunner().invoke(main, ["run", "--source", str(DEMO_SOURCE), "--db", db, "--boot-time", "gpu001"])
    assert bad_boot.exit_code != 0 and "HOST=TIME" in bad_boot.output


def test_cli_sql_prints_types_polars_cannot_hold(demo_warehouse):
    """On `goodput run`'s warehouse of the demo (conftest's, read only)."""
    result = CliRunner().invoke(main, ["sql", "--db", str(demo_warehouse), "--csv",
                                       "SELECT job_id, end_time - start_time AS took FROM jobs WHERE job_id = '1002'"])
    assert result.exit_code == 0, result.output
    assert result.output.splitlines() == ["job_id,took", "1002,1:29:12"]


def test_cli_simulate_and_demo(tmp_path):
    out = tmp_path / "sim"
    result = CliRunner().invoke(main, ["simulate", "--out", str(out), "--nodes", "8", "--days", "2", "--seed", "3"])
    assert result.exit_code == 0, result.output
    assert "job instances" in result.output and (out / "truth" / "job_instances.csv").exists()
    again = CliRunner().invoke(main, ["simulate", "--out", str(out), "--nodes", "8", "--days", "2"])
    assert again.exit_code != 0 and "not empty" in again.output
    with quick_telemetry():  # what the demo builds is checked, not how well its detectors learn
        demo = CliRunner().invoke(main, ["demo", "--db", str(tmp_path / "demo.duckdb"), "--out", str(tmp_path / "demo"), "-q"])
    assert demo.exit_code == 0, demo.output
    assert "simulated" in demo.output and "All assets materialized" in demo.output
    counts = table_counts(tmp_path / "demo.duckdb")
    assert counts["jobs"] > 1000 and counts["telemetry"] > 0


def test_an_unreadable_source_fails_the_run(tmp_path):
    result = CliRunner().invoke(main, ["run", "--source", str(DEMO_SOURCE), "--db", str(tmp_path / "w.duckdb"),
                                       "--out", str(tmp_path / "out"), "--sacct-delimiter", ",", "-q"])
    assert result.exit_code != 0
    assert "sacct_records.not_all_rejected" in result.output


def test_demo_sample_starts_from_an_empty_warehouse(tmp_path):
    db = tmp_path / "demo.duckdb"
    for _ in range(2):
        out = CliRunner().invoke(main, ["demo", "--sample", "--db", str(db), "--out", str(tmp_path / "o"), "-q"])
        assert out.exit_code == 0, out.output
    assert table_counts(db)["jobs"] == 10


def test_lines_accounted_checks_only_the_files_of_this_run(tmp_path, monkeypatch):
    import dataclasses

    import analysis.ingest.one_file
    from assets.ingest import ingest_assets, ingest_checks

    src, db = tmp_path / "src", tmp_path / "w.duckdb"
    shutil.copytree(DEMO_SOURCE, src)
    resources = {"warehouse": Warehouse(db_path=str(db)), "sources": LogSources(source_dir=str(src))}

    def ingest():
        result = materialize([*ingest_assets, *ingest_checks], resources=resources, raise_on_error=False,
                             instance=DagsterInstance.ephemeral())
        return {e.check_name: e for e in result.get_asset_check_evaluations()
                if e.asset_key.to_user_string() == "kernel_events"}

    assert all(e.passed for e in ingest().values())
    # an old file's record no longer adds up: not this run's business
    con = duckdb.connect(str(db))
    con.execute("UPDATE ingested_files SET lines = lines + 1 WHERE path = ?", [str(src / "kernel" / "gpu003.log")])
    con.close()
    (src / "kernel" / "gpu010.log").write_text((DEMO_SOURCE / "kernel" / "gpu003.log").read_text().replace("gpu003", "gpu010"))
    checks = ingest()
    assert checks["lines_accounted"].passed
    # a file read in this run that loses a line fails the check, naming the file
    real = analysis.ingest.one_file.Tally.counts  # the engine adds a file's counts up with a Tally

    def one_more_line(self, n_lines, refused):
        counts = real(self, n_lines, refused)
        return dataclasses.replace(counts, lines=counts.lines + 1)

    monkeypatch.setattr(analysis.ingest.one_file.Tally, "counts", one_more_line)
    (src / "kernel" / "gpu011.log").write_text((DEMO_SOURCE / "kernel" / "gpu003.log").read_text().replace("gpu003", "gpu011"))
    failed = ingest()["lines_accounted"]
    assert not failed.passed
    assert str(src / "kernel" / "gpu011.log") in failed.description and "gpu003.log" not in failed.description
