"""A rerun rebuilds only what its inputs changed: nothing when no file is new, the steps after a source that got a
file, the steps that read a changed rules file; `--rebuild` everything; `goodput forget` invalidates."""
import shutil

import duckdb
import pytest
from click.testing import CliRunner
from dagster import (AssetCheckResult, DagsterInstance, MaterializeResult, MetadataValue, asset, asset_check,
                     materialize)

from assets.degrade import withheld_on_error
from assets.unchanged import UNCHANGED, replayed_while_unchanged, unless_unchanged
from pipelines.cli import DEMO_SOURCE, main
from assets.resources import TaxonomyConfig, Warehouse

RULES = "windows: {{before_minutes: {before}, after_minutes: 5}}\n"  # a taxonomy override: the attribution window

# --- the mechanism, on two small assets and a check (no pipeline) ---

calls: list[str] = []


@asset
@unless_unchanged
def upstream_table(warehouse: Warehouse, taxonomy: TaxonomyConfig) -> MaterializeResult:
    calls.append("upstream")
    if FAIL.get("upstream"):
        raise RuntimeError("disk full")
    return MaterializeResult(metadata={"rows": 3})


@asset(deps=[upstream_table])
@unless_unchanged
@withheld_on_error
def downstream_file(warehouse: Warehouse) -> MaterializeResult:
    calls.append("downstream")
    if FAIL.get("downstream"):
        raise ValueError("odd input")
    path = FAIL["out"] / "downstream.txt"
    path.write_text("built")
    return MaterializeResult(metadata={"path": MetadataValue.path(str(path))})


@asset_check(asset=downstream_file)
@replayed_while_unchanged
def downstream_sane(warehouse: Warehouse) -> AssetCheckResult:
    calls.append("check")
    return AssetCheckResult(passed=False, description="two bad rows", metadata={"bad": 2})


FAIL: dict = {}


def materialize_small(db, rules=None):
    calls.clear()
    result = materialize([upstream_table, downstream_file, downstream_sane], instance=DagsterInstance.ephemeral(),
                         resources={"warehouse": Warehouse(db_path=str(db)),
                                    "taxonomy": TaxonomyConfig(rules_file=str(rules) if rules else None)},
                         raise_on_error=False)
    meta = {e.asset_key.to_user_string(): e.materialization.metadata for e in result.get_asset_materialization_events()}
    return result, meta


@pytest.fixture
def small(tmp_path):
    FAIL.clear()
    FAIL["out"] = tmp_path
    rules = tmp_path / "rules.yaml"
    rules.write_text(RULES.format(before=10))
    return tmp_path / "w.duckdb", rules


def test_an_unchanged_step_is_not_run_and_its_check_replays_its_failure(small):
    db, rules = small
    materialize_small(db, rules)
    assert calls == ["upstream", "downstream", "check"]
    result, meta = materialize_small(db, rules)
    assert calls == []
    assert meta["upstream_table"][UNCHANGED].value is True and meta["upstream_table"]["rows"].value == 3
    assert meta["downstream_file"]["path"].value.endswith("downstream.txt")
    check = result.get_asset_check_evaluations()[0]
    assert not check.passed  # a failure stays a failure, said as it was said
    assert check.description == "two bad rows" and check.metadata["bad"].value == 2
    assert check.metadata[UNCHANGED].value is True


def test_a_changed_setting_file_rebuilds_the_step_and_what_follows(small):
    db, rules = small
    materialize_small(db, rules)
    rules.write_text(RULES.format(before=20))  # same path, other content
    materialize_small(db, rules)
    assert calls == ["upstream", "downstream", "check"]
    materialize_small(db, rules)
    assert calls == []


def test_a_deleted_output_file_is_written_again(small):
    db, rules = small
    materialize_small(db, rules)
    (FAIL["out"] / "downstream.txt").unlink()
    materialize_small(db, rules)
    assert calls == ["downstream", "check"] and (FAIL["out"] / "downstream.txt").exists()


def crash_after_a_change(small, step: str):
    """Build, then run again with other rules and ``step`` crashing; the next runs do not crash."""
    db, rules = small
    materialize_small(db, rules)
    FAIL[step] = True
    rules.write_text(RULES.format(before=30))
    crashed = materialize_small(db, rules)
    FAIL[step] = False
    return crashed


def test_a_withheld_step_keeps_its_version_and_is_built_again_next_time(small):
    db, rules = small
    _, meta = crash_after_a_change(small, "downstream")
    assert "withheld" in meta["downstream_file"]
    assert calls == ["upstream", "downstream"]  # it kept its contents: the check's last outcome stands
    _, meta = materialize_small(db, rules)  # the same inputs: built again all the same
    assert calls == ["downstream", "check"] and UNCHANGED not in meta["downstream_file"]


def test_a_crashed_step_is_built_again_even_from_the_inputs_it_was_last_built_from(small):
    db, rules = small
    result, _ = crash_after_a_change(small, "upstream")
    assert not result.success and calls == ["upstream"]
    rules.write_text(RULES.format(before=10))  # what it was last built from
    materialize_small(db, rules)  # it may have written half its tables before it crashed
    assert calls == ["upstream", "downstream", "check"]


# --- the pipeline on the demo source ---


def run(src, db, out, *more):
    """`goodput run`, with a rules file beside the source (as the taxonomy shipped, until a test edits it)."""
    rules = src.parent / "rules.yaml"
    if not rules.exists():
        rules.write_text(RULES.format(before=10))
    result = CliRunner().invoke(main, ["run", "--source", str(src), "--db", str(db), "--out", str(out),
                                       "--rules", str(rules), "-q", *more])
    assert result.exit_code == 0, result.output
    return result.output


def records(db) -> dict:
    con = duckdb.connect(str(db), read_only=True)
    try:
        return {a: (v, b) for a, v, b in con.execute("SELECT asset, output_version, built_at FROM asset_inputs")
                .fetchall()}
    finally:
        con.close()


def content(db) -> dict:
    con = duckdb.connect(str(db), read_only=True)
    try:
        return {t: con.execute(f"SELECT count(*), bit_xor(hash(t)) FROM {t} t").fetchall()[0]
                for t in ("jobs", "node_events", "classified_events", "failure_attribution", "job_run_ettr",
                          "goodput_daily", "node_actions", "lemon_scores")}
    finally:
        con.close()


def rebuilt(before: dict, after: dict) -> set[str]:
    """The steps built again (a new output version), and the checks run again."""
    return {a for a in after if a not in before or after[a] != before[a]}


@pytest.fixture(scope="module")
def built_once(tmp_path_factory):
    """One build, kept aside; each test gets it back at the same paths (the source directory, --out and the
    warehouse are inputs: a copy elsewhere would not be the same run)."""
    root = tmp_path_factory.mktemp("unchanged")
    work = root / "work"
    shutil.copytree(DEMO_SOURCE, work / "src")
    run(work / "src", work / "w.duckdb", work / "out")
    shutil.copytree(work, root / "kept")  # copy2: the files keep their modification times
    return root


@pytest.fixture
def built(built_once):
    work = built_once / "work"
    shutil.rmtree(work)
    shutil.copytree(built_once / "kept", work)
    return work / "src", work / "w.duckdb", work / "out"


DERIVED = {"jobs", "node_events", "classified_events", "failure_attribution", "job_runs", "node_incidents",
           "job_run_ettr", "node_gpus", "failure_rates", "goodput", "iteration_degradation", "node_actions",
           "node_exports", "benchmark_criteria", "criteria_exports", "machine_alerts", "detector_evaluation",
           "port_counter_events", "job_log_events", "daily_source_volume", "reliability_report"}


def test_a_rerun_with_no_new_file_rebuilds_nothing(built):
    src, db, out = built
    before, tables = records(db), content(db)
    assert DERIVED <= set(before)
    report = (out / "reports" / "latest.html").read_text()
    output = run(src, db, out)
    assert records(db) == before  # no step built, no check run: same versions, same times
    assert content(db) == tables
    assert (out / "reports" / "latest.html").read_text() == report
    steps = len(before) - sum(":" in a for a in before)  # the ingest and built steps (checks are 'asset:check')
    assert f"{steps} of {steps} steps unchanged since the last run" in output
    assert "Report: " in output  # the report of the last run is still the one shown


def test_a_new_file_rebuilds_what_reads_its_source_only(built):
    src, db, out = built
    before = records(db)
    (src / "kernel" / "gpu002.log").write_text(
        "2024-03-01T08:00:00+0000 gpu002 kernel: NVRM: Xid (PCI:0000:29:00): 79, pid=1234, name=python, "
        "GPU has fallen off the bus.\n")
    run(src, db, out)
    again = rebuilt(before, records(db))
    steps = {a for a in again if ":" not in a}
    # job_runs too: a failure (what a crash loop counts) is an instance its attribution explains
    assert {"kernel_events", "node_events", "classified_events", "failure_attribution", "node_incidents", "job_runs",
            "job_run_ettr", "failure_rates", "goodput", "node_actions", "reliability_report"} <= steps
    # jobs, telemetry models, benchmarks and port counters read no kernel log: kept
    assert not steps & {"jobs", "node_gpus", "machine_alerts", "benchmark_criteria", "criteria_exports",
                        "port_counter_events", "job_log_events", "iteration_degradation", "sacct_records"}
    assert "jobs:jobs_instances_sequential" not in again and "failure_attribution:one_primary_cause" in again


def test_a_changed_rules_file_rebuilds_attribution_and_what_follows(built):
    src, db, out = built
    before = records(db)
    (src.parent / "rules.yaml").write_text(RULES.format(before=120))  # the same file, edited
    run(src, db, out)
    steps = {a for a in rebuilt(before, records(db)) if ":" not in a}
    assert {"classified_events", "failure_attribution", "node_incidents", "job_run_ettr", "goodput",
            "node_actions", "reliability_report"} <= steps
    assert not steps & {"jobs", "node_events", "machine_alerts", "benchmark_criteria", "kernel_events"}


def test_rebuild_rebuilds_everything(built):
    src, db, out = built
    before = records(db)
    con = duckdb.connect(str(db))
    counts = con.execute("SELECT (SELECT count(*) FROM classified_events), (SELECT count(*) FROM job_runs)").fetchone()
    # a table damaged by hand: an extending build would keep the damage (its inputs' digests did not change)
    con.execute("DELETE FROM classified_events WHERE rowid IN (SELECT min(rowid) FROM classified_events)")
    con.execute("DELETE FROM job_runs WHERE rowid IN (SELECT min(rowid) FROM job_runs)")
    con.close()
    output = run(src, db, out, "--rebuild")
    assert DERIVED <= rebuilt(before, records(db))
    assert "unchanged since the last run" not in output
    with duckdb.connect(str(db), read_only=True) as con:  # built from scratch, not extended
        assert con.execute("SELECT (SELECT count(*) FROM classified_events), (SELECT count(*) FROM job_runs)").fetchone() \
            == counts and counts[0] > 0 and counts[1] > 0


def test_forget_invalidates_what_was_built_from_the_files(built):
    src, db, out = built
    log = (src / "kernel" / "gpu007.log").resolve()
    before = records(db)
    # forgotten but still on disk: read again as it was, so nothing after the ingest changes
    assert CliRunner().invoke(main, ["forget", "--db", str(db), str(log)]).exit_code == 0
    run(src, db, out)
    assert not {a for a in rebuilt(before, records(db)) if ":" not in a} & DERIVED
    # forgotten and gone: what was built from it is rebuilt
    log.unlink()
    assert CliRunner().invoke(main, ["forget", "--db", str(db), str(log)]).exit_code == 0
    run(src, db, out)
    assert {"node_events", "classified_events", "failure_attribution"} <= rebuilt(before, records(db))
