"""`goodput run` errors a user can act on: one clear line (or the files, the
reject reason and the fix), a non-zero exit, and checks made before the work."""
import shutil
import subprocess
import sys
import textwrap

import pytest
from click.testing import CliRunner

from analysis.ingest.options import OptionsError, load_options
from pipelines.cli import DEMO_SOURCE, main
from pipelines.runner import EXIT_DEGRADED

RAW_DMESG = "[   12.500000] NVRM: Xid (PCI:0000:b3:00): 79, pid=1, name=x, GPU has fallen off the bus.\n"


def run(src, tmp_path, *extra):
    return CliRunner().invoke(main, ["run", "--source", str(src), "--db", str(tmp_path / "w.duckdb"),
                                     "--out", str(tmp_path / "out"), "-q", *extra])


def assert_one_line_error(result, *needles):
    assert result.exit_code != 0
    assert "Traceback" not in result.output and "Stack Trace" not in result.output
    assert len(result.output.strip().splitlines()) == 1, result.output
    for needle in needles:
        assert needle in result.output, result.output


@pytest.fixture
def src(tmp_path):
    shutil.copytree(DEMO_SOURCE, tmp_path / "src")
    return tmp_path / "src"


def test_a_failing_source_check_names_the_file_the_reason_and_the_fix(src, tmp_path):
    (src / "kernel" / "gpu009.dmesg").write_text(RAW_DMESG * 3)
    result = run(src, tmp_path)
    assert result.exit_code == EXIT_DEGRADED  # the report is built without that file
    out = result.output
    assert "Traceback" not in out and "Stack Trace" not in out and "DagsterAssetCheckFailedError" not in out
    assert "kernel_events.not_all_rejected" in out
    assert f"{src / 'kernel' / 'gpu009.dmesg'}: 3 of 3 lines rejected" in out
    assert "no boot time for host gpu009: pass --boot-time or write gpu009.dmesg.boottime" in out
    assert "Not rebuilt" not in out and "Report: " in out
    assert "kernel/ (degraded)" in out and "GPU and kernel faults (XID, ECC, ...) are not attributed" in out
    assert len(out.splitlines()) < 40
    # the fix the message names works: a boot time sidecar re-reads the file
    (src / "kernel" / "gpu009.dmesg.boottime").write_text("2024-03-01T00:00:00Z\n")
    again = run(src, tmp_path)
    assert again.exit_code == 0, again.output


def test_a_warehouse_held_by_another_process_is_one_line(tmp_path):
    db = tmp_path / "w.duckdb"
    holder = subprocess.Popen([sys.executable, "-c", textwrap.dedent("""
        import sys, time, duckdb
        con = duckdb.connect(sys.argv[1])
        print("ready", flush=True)
        time.sleep(120)
        """), str(db)], stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "ready"
        result = run(DEMO_SOURCE, tmp_path)
        assert_one_line_error(result, "in use by another process", f"PID {holder.pid}")
        assert not (tmp_path / "out" / "ingest_summary.csv").exists()
        query = CliRunner().invoke(main, ["sql", "--db", str(db), "SELECT 1"])
        assert_one_line_error(query, "in use by another process")
    finally:
        holder.kill()
        holder.wait()


def test_an_unwritable_out_fails_before_the_build(tmp_path):
    (tmp_path / "a_file").write_text("not a folder\n")
    result = CliRunner().invoke(main, ["run", "--source", str(DEMO_SOURCE), "--db", str(tmp_path / "w.duckdb"),
                                       "--out", str(tmp_path / "a_file" / "out"), "-q"])
    assert_one_line_error(result, "cannot write to --out")
    assert not (tmp_path / "w.duckdb").exists()  # nothing was built


@pytest.mark.parametrize("yaml_text, needles", [
    ("tz: [UTC\n", ["goodput.yaml", "not valid YAML at line 2"]),
    ("syslog_year: abc\n", ["goodput.yaml", "syslog_year must be a whole number", "'abc'"]),
    ("syslog_year: 24\n", ["syslog_year must be a year such as 2024"]),
    ("tz: 5\n", ["tz must be a non-empty text"]),
    ("sacct_delimiter: |\n", ["sacct_delimiter", 'quote it: "|"']),
    ("boot_times: [gpu001]\n", ["boot_times must map host names to times"]),
    ("boot_times:\n  gpu001: yesterday\n", ["boot time of gpu001", "'yesterday' is not an ISO 8601 time"]),
    ("benchmark_run_times: [nccl-run1]\n", ["benchmark_run_times must map run folders under benchmarks/ to times"]),
    ("benchmark_run_times:\n  nccl-run1: last week\n", ["run time of nccl-run1", "'last week' is not an ISO 8601"]),
    ("max_line_bytes: -5\n", ["max_line_bytes must be positive"]),
    ("- tz\n- UTC\n", ["expected 'option: value' lines"]),
    ("timezone: UTC\n", ["unknown option(s) timezone"]),
])
def test_goodput_yaml_errors_are_one_line_before_any_work(src, tmp_path, yaml_text, needles):
    (src / "goodput.yaml").write_text(yaml_text)
    with pytest.raises(OptionsError):
        load_options(src)
    result = run(src, tmp_path)
    assert_one_line_error(result, "bad options", *needles)
    assert not (tmp_path / "w.duckdb").exists()


def test_good_options_still_load(src):
    (src / "goodput.yaml").write_text("tz: Europe/Paris\nsyslog_year: 2024\nboot_times:\n  gpu001: 2024-03-01T06:00:00+01:00\n")
    with open(src / "goodput.yaml", "a") as fh:
        fh.write("benchmark_run_times:\n  nccl-run1: 2024-03-14T07:00:00+01:00\n  validation-0301: 2024-03-01\n")
    opts = load_options(src, sacct_delimiter="|#", boot_times={"gpu002": "2024-03-02T00:00:00"})
    assert (opts.tz, opts.syslog_year, opts.sacct_delimiter) == ("Europe/Paris", 2024, "|#")
    assert {r: t.isoformat() for r, t in opts.benchmark_run_times.items()} == {
        "nccl-run1": "2024-03-14T06:00:00", "validation-0301": "2024-03-01T00:00:00"}
    assert {h: t.isoformat() for h, t in opts.boot_times.items()} == {"gpu001": "2024-03-01T05:00:00",
                                                                       "gpu002": "2024-03-02T00:00:00"}


def test_a_bad_rules_file_is_one_line(tmp_path):
    rules = tmp_path / "rules.yaml"
    rules.write_text("no_such_section: 1\n")
    result = run(DEMO_SOURCE, tmp_path, "--rules", str(rules))
    assert_one_line_error(result, "bad rules file", str(rules))
    assert not (tmp_path / "w.duckdb").exists()


def test_a_crashing_step_is_one_line_and_its_trace_goes_to_a_file(tmp_path, monkeypatch):
    import assets.derived

    def broken(con):
        raise RuntimeError("simulated crash in build_jobs")

    monkeypatch.setattr(assets.derived, "build_jobs", broken)
    result = run(DEMO_SOURCE, tmp_path)
    assert result.exit_code == 1
    assert "FAILED: step jobs failed: RuntimeError: simulated crash in build_jobs" in result.output
    assert "Traceback" not in result.output and "Stack Trace" not in result.output
    log = (tmp_path / "out" / "goodput-errors.log").read_text()
    assert "simulated crash in build_jobs" in log and "Stack Trace" in log
