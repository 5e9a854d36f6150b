"""Degrade, don't die: one broken source or one crashed optional step holds back only what reads it; the
report is built with a data-health banner, the summary says the same, and the exit code tells cron which."""
import shutil

import duckdb
import pytest
from click.testing import CliRunner
from dagster import AssetCheckSeverity, DagsterInstance, materialize

from pipelines.cli import DEMO_SOURCE, main
from pipelines.definitions import all_assets, all_checks
from pipelines.runner import EXIT_DEGRADED, EXIT_FAILED, EXIT_OK
from tests.test_pipeline import resources_for

BROKEN_NETWORK = "time,host,metric,value\nnot-a-time,gpu001,port_rcv_errors,xx\nbad,gpu002,symbol_error,yy\n"


@pytest.fixture
def source(tmp_path):
    src = tmp_path / "src"
    shutil.copytree(DEMO_SOURCE, src)
    return src


def run(src, tmp_path):
    db, out = tmp_path / "w.duckdb", tmp_path / "out"
    result = CliRunner().invoke(main, ["run", "--source", str(src), "--db", str(db), "--out", str(out), "-q"])
    return result, db, out


def rows(db, query):
    con = duckdb.connect(str(db), read_only=True)
    try:
        return con.execute(query).fetchall()
    finally:
        con.close()


def test_a_source_with_every_line_rejected_degrades_the_run(source, tmp_path):
    (source / "network").mkdir()
    (source / "network" / "counters.csv").write_text(BROKEN_NETWORK)
    result, db, out = run(source, tmp_path)
    assert result.exit_code == EXIT_DEGRADED, result.output
    report = (out / "reports" / "latest.html").read_text()
    banner = report[report.index('id="data-health"'):report.index("</div>", report.index('id="data-health"'))]
    assert "network/" in banner and "every line rejected" in banner
    assert "link faults seen only in port counters are not attributed" in banner
    # everything that does not read port counters is built as usual
    assert rows(db, "SELECT count(*) FROM failure_attribution")[0][0] > 0
    assert rows(db, "SELECT count(*) FROM node_events WHERE kind = 'xid'")[0][0] > 0
    assert (out / "exports" / "blocklist.txt").exists()
    summary = result.output
    assert "Data health: degraded" in summary and "network/ (degraded)" in summary
    assert "link faults seen only in port counters are not attributed" in summary
    assert summary.rstrip().endswith(f"Run degraded (exit {EXIT_DEGRADED}).")
    # fixed and run again: healthy, exit 0, no banner
    (source / "network" / "counters.csv").write_text("time,host,metric,value\n2024-03-01T00:00:00Z,gpu001,"
                                                    "port_rcv_errors,0\n")
    again, _, out = run(source, tmp_path)
    assert again.exit_code == EXIT_OK, again.output
    assert 'id="data-health"' not in (out / "reports" / "latest.html").read_text()


def test_a_crashed_optional_step_is_withheld_and_the_rest_is_built(source, tmp_path, monkeypatch):
    from analysis.telemetry import run as telemetry_run

    def crash(*args, **kwargs):
        raise ValueError("odd telemetry shape\nsecond line")

    monkeypatch.setattr(telemetry_run, "run", crash)
    result, db, out = run(source, tmp_path)
    assert result.exit_code == EXIT_DEGRADED, result.output
    assert rows(db, "SELECT step, reason FROM withheld_steps") == [
        ("machine_alerts", "ValueError: odd telemetry shape second line")]
    assert rows(db, "SELECT count(*) FROM failure_attribution")[0][0] > 0
    banner = (out / "reports" / "latest.html").read_text()
    assert "step machine_alerts" in banner and "seen only in telemetry, are not flagged" in banner
    assert "step machine_alerts (degraded): ValueError: odd telemetry shape" in result.output
    assert "odd telemetry shape" in (out / "goodput-errors.log").read_text()  # the full trace
    monkeypatch.undo()  # the step runs again: no longer withheld
    again, _, _ = run(source, tmp_path)
    assert again.exit_code == EXIT_OK, again.output
    assert rows(db, "SELECT count(*) FROM withheld_steps")[0][0] == 0


def test_no_report_is_a_failed_run(tmp_path):
    """No source has a dated record (every sacct line rejected): no day to report on. (A kernel log alone has days:
    its node history is reported, tests/test_node_history.py.)"""
    src = tmp_path / "src"
    (src / "slurm").mkdir(parents=True)
    (src / "slurm" / "sacct.txt").write_text("JobID|State|Start|End\n1|COMPLETED|garbage|garbage\n")
    result, _, out = run(src, tmp_path)
    assert result.exit_code == EXIT_FAILED, result.output
    assert not (out / "reports").exists() or not list((out / "reports").glob("*.html"))
    assert "No report" in result.output and f"Run failed (exit {EXIT_FAILED})." in result.output


def test_dagster_run_succeeds_with_the_failed_source_check(source, tmp_path):
    (source / "network").mkdir()
    (source / "network" / "counters.csv").write_text(BROKEN_NETWORK)
    result = materialize([*all_assets, *all_checks], resources=resources_for(source, tmp_path / "w.duckdb", tmp_path),
                         instance=DagsterInstance.ephemeral(), raise_on_error=False)
    assert result.success
    failed = [e for e in result.get_asset_check_evaluations() if not e.passed]
    assert [(e.asset_key.to_user_string(), e.check_name, e.severity) for e in failed] == [
        ("network_counters", "not_all_rejected", AssetCheckSeverity.ERROR)]
    built = {e.asset_key.to_user_string() for e in result.get_asset_materialization_events()}
    assert {"node_events", "failure_attribution", "node_actions", "node_exports"} <= built


def test_every_source_and_optional_step_says_what_is_missing_without_it():
    from analysis.commands import data_health
    from analysis.sources import SOURCES

    assert all(s.missing for s in SOURCES.values())
    withheld = {a.op.name for a in all_assets if getattr(a.op.compute_fn.decorated_fn, "__wrapped__", None)}
    assert set(data_health.MISSING_WITHOUT_STEP) <= withheld
    assert {"machine_alerts", "port_counter_events", "job_log_events", "node_actions", "node_exports"} <= withheld
