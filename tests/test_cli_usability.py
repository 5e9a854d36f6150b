"""What the command line says when things go wrong or take long: a step interrupted by a signal ends the
demo in a summary (no traceback) that names goodput-errors.log; a bare command after `make demo` points at
the demo's warehouse; model training tells its progress; `--out` means the same for every command."""
from pathlib import Path

import numpy as np
import polars as pl
from click.testing import CliRunner

from pipelines.cli import DEMO_SOURCE, main


def test_a_step_interrupted_by_a_signal_degrades_the_demo_with_a_clear_message(tmp_path, monkeypatch):
    from dagster._core.errors import DagsterExecutionInterruptedError

    import assets.derived

    def interrupted(con):  # what Dagster raises inside the running step on SIGINT (Ctrl-C)
        raise DagsterExecutionInterruptedError()

    monkeypatch.setattr(assets.derived, "build_jobs", interrupted)
    db = tmp_path / "demo.duckdb"
    result = CliRunner().invoke(main, ["demo", "--sample", "--db", str(db), "--out", str(tmp_path / "o"), "-q"])
    assert result.exit_code == 1 and isinstance(result.exception, SystemExit), result.output
    assert "Traceback" not in result.output
    assert "FAILED: step jobs interrupted (SIGINT, Ctrl-C)" in result.output
    assert f"{tmp_path / 'o' / 'goodput-errors.log'}" in result.output  # where the full traceback went
    assert "DagsterExecutionInterruptedError" in (tmp_path / "o" / "goodput-errors.log").read_text()
    assert "No commands to try: the run did not build" in result.output  # the hints read what was not built
    why = CliRunner().invoke(main, ["why", "--db", str(db), "1001"])
    assert why.exit_code == 1 and "Traceback" not in why.output
    assert "has no" in why.output and "run it again" in why.output and len(why.output.strip().splitlines()) == 1


def test_a_crash_outside_the_steps_is_one_line_naming_the_errors_log(tmp_path, monkeypatch):
    from analysis.commands import diagnose

    def broken(*args, **kwargs):
        raise RuntimeError("a bug after the steps")

    monkeypatch.setattr(diagnose, "coverage", broken)
    out = tmp_path / "o"
    result = CliRunner().invoke(main, ["run", "--source", str(DEMO_SOURCE), "--db", str(tmp_path / "w.duckdb"),
                                       "--out", str(out), "-q"])
    assert result.exit_code == 1 and "Traceback" not in result.output
    assert f"RuntimeError: a bug after the steps (the full traceback is in {out / 'goodput-errors.log'}" in result.output
    assert "a bug after the steps" in (out / "goodput-errors.log").read_text()


def test_a_bare_command_after_the_demo_points_at_its_warehouse(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("GOODPUT_DB", raising=False)
    before = CliRunner().invoke(main, ["why", "1001"])
    assert before.exit_code == 1 and "no warehouse at data/warehouse.duckdb" in before.output
    assert "demo" not in before.output
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "demo.duckdb").write_bytes(b"")  # what `make demo` leaves
    for args in (["why", "1001"], ["sql", "SELECT 1"], ["export"]):
        result = CliRunner().invoke(main, args)
        assert result.exit_code == 1 and "--db data/demo.duckdb" in result.output, (args, result.output)


def test_a_tab_delimiter_can_be_given_as_backslash_t(tmp_path):
    from analysis.ingest.options import load_options

    (tmp_path / "slurm").mkdir()
    assert load_options(tmp_path, sacct_delimiter="\\t").sacct_delimiter == "\t"
    assert load_options(tmp_path, sacct_delimiter="|").sacct_delimiter == "|"


def test_model_training_tells_its_progress(caplog):
    from analysis.nodes import survival

    rng = np.random.default_rng(0)
    n = 240
    samples = pl.DataFrame({**{c: rng.integers(0, 50, n).astype(float) for c in survival.COVARIATES},
                            "duration_h": rng.uniform(1, 500, n), "event": (rng.random(n) < 0.3).astype(int)})
    with caplog.at_level("INFO", logger="goodput.progress"):
        survival.CoxTime(epochs=1, seeds=(0, 1)).fit(samples)
    told = [r.getMessage() for r in caplog.records if r.name == "goodput.progress"]
    assert [m.strip() for m in told] == [
        f"incident model: training Cox-Time network {i}/2 ({n} samples, up to 1 epochs)" for i in (1, 2)]


def test_out_means_one_output_folder_with_one_layout():
    """--out is OUT for every command that writes files: run writes OUT/exports/ and OUT/exports/criteria/,
    and export and criteria write the same files in the same places (tests/test_criteria_superbench.py and
    tests/test_node_exports_live.py look for them there), so one default serves all three."""
    out = {name: next(p.default for p in main.commands[name].params if p.name == "out")
           for name in ("run", "export", "criteria")}
    assert out["export"] == out["criteria"] == out["run"]
