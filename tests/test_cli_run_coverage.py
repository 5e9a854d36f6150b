"""Input that ingests but yields nothing usable is loud: a misnamed folder, a
step-only sacct dump, hosts invented from file names warn (once, in the run
summary); a run where no source produced a row fails."""
import shutil
from datetime import datetime

from click.testing import CliRunner

from pipelines.cli import DEMO_SOURCE, main
from pipelines.runner import EXIT_DEGRADED

SACCT = DEMO_SOURCE / "slurm" / "sacct-2024-03-01.txt"


def run(src, tmp_path):
    return CliRunner().invoke(main, ["run", "--source", str(src), "--db", str(tmp_path / "w.duckdb"),
                                     "--out", str(tmp_path / "out"), "-q"])


def warnings(result):
    warned = [line for line in result.stdout.splitlines() if line.startswith("WARNING: ")]
    assert all(result.output.count(w) == 1 for w in warned), result.output  # each said once, in the summary
    return warned


def test_a_misnamed_folder_warns_with_the_right_name(tmp_path):
    src = tmp_path / "src"
    shutil.copytree(DEMO_SOURCE, src)
    (src / "slurm").rename(src / "sacct")
    result = run(src, tmp_path)
    # slurm/ is the one source goodput requires (issue 34: `check` and `run` judge alike): refused before any work,
    # naming the folder that was probably meant
    assert result.exit_code == 1, result.output
    assert "has no file in slurm/ (sacct dumps), the one source goodput requires" in result.output
    assert "1 file(s) in folder sacct/ were not read, it is not a source folder: did you mean slurm/?" in result.output
    assert not (tmp_path / "w.duckdb").exists()


def test_only_misnamed_folders_fail_before_any_work(tmp_path):
    (tmp_path / "src" / "sacct").mkdir(parents=True)
    shutil.copy(SACCT, tmp_path / "src" / "sacct")
    result = run(tmp_path / "src", tmp_path)
    assert result.exit_code != 0
    assert "nothing would be read" in result.output and "did you mean slurm/?" in result.output
    assert not (tmp_path / "w.duckdb").exists()


def test_a_step_only_sacct_dump_warns(tmp_path):
    src = tmp_path / "src"
    (src / "slurm").mkdir(parents=True)
    lines = SACCT.read_text().splitlines()
    steps = [lines[0]] + [line for line in lines[1:] if "." in line.split("|")[0]]
    (src / "slurm" / "steps.txt").write_text("\n".join(steps) + "\n")
    result = run(src, tmp_path)
    assert result.exit_code == EXIT_DEGRADED, result.output  # no jobs: node history only, degraded
    warned = "\n".join(warnings(result))
    assert f"{(src / 'slurm' / 'steps.txt').resolve()}: {len(steps) - 1} job-step lines and no job allocation line" in warned
    assert "0 jobs" in warned


def test_a_host_invented_from_a_file_name_warns(tmp_path):
    src = tmp_path / "src"
    shutil.copytree(DEMO_SOURCE, src)
    shutil.copy(DEMO_SOURCE / "kernel" / "gpu001.dmesg", src / "kernel" / "export.log")
    result = run(src, tmp_path)
    assert result.exit_code == 0, result.output
    warned = "\n".join(warnings(result))
    assert f"{(src / 'kernel' / 'export.log').resolve()} -> 'export'" in warned
    assert "gpu001.dmesg" not in warned  # gpu001 is a Slurm node: no warning for it


def test_no_row_from_any_source_fails_the_run(tmp_path):
    src = tmp_path / "src"
    (src / "telemetry").mkdir(parents=True)
    (src / "telemetry" / "notes.csv").write_text("this is not telemetry\n")
    (src / "topology").mkdir()
    (src / "topology" / "cabling.csv").write_text("zzz\n")
    (src / "slurm").mkdir()
    (src / "slurm" / "sacct.txt").write_text("not an accounting dump\n")
    result = run(src, tmp_path)
    assert result.exit_code == 1
    assert "FAILED: none of the 3 file(s) in source folders produced a row" in result.output
    assert "Traceback" not in result.output


def test_a_validation_run_dated_after_the_as_of_day_warns_and_its_time_can_be_given(tmp_path):
    """SuperBench results without a timestamp: the run is dated by its file's modification time (the day of
    the copy), after the as-of day of the node actions, so gpu002's failed validation drains nothing. The run
    says so (summary and report), and benchmark_run_times in goodput.yaml gives the run its time."""
    import json

    import duckdb

    src = tmp_path / "src"
    shutil.copytree(DEMO_SOURCE, src)
    (src / "benchmarks" / "val-0302").mkdir()
    rows = [json.loads(line) for line in (src / "benchmarks" / "results-summary.jsonl").read_text().splitlines()]
    (src / "benchmarks" / "val-0302" / "results-summary.jsonl").write_text("".join(
        json.dumps({k: v * 0.5 if r["node"] == "gpu002" and k.startswith("gemm-flops/") else v
                    for k, v in r.items() if k != "timestamp"}) + "\n" for r in rows))

    def actions():
        with duckdb.connect(str(tmp_path / "w.duckdb"), read_only=True) as con:
            return dict(con.execute("SELECT host, action FROM node_actions").fetchall()), con.execute(
                "SELECT DISTINCT run_time FROM benchmark_results WHERE file LIKE '%val-0302%'").fetchall()

    late = run(src, tmp_path)
    assert late.exit_code == EXIT_DEGRADED, late.output
    said = next(line for line in late.stdout.splitlines() if "val-0302" in line)
    assert "benchmarks/ (degraded): 1 validation run(s) (val-0302) carry no time" in said
    assert "on or after the as-of day 2024-03-03: their verdicts are ignored (2 node(s) failed in them)" in said
    assert "benchmark_run_times: {val-0302: YYYY-MM-DDTHH:MM:SSZ}" in said
    report = next((tmp_path / "out" / "reports").glob("reliability-*.html")).read_text()
    assert "val-0302" in report and "benchmark_run_times" in report
    hosts, times = actions()
    assert "gpu002" not in hosts and times == [(None,)]

    with open(src / "goodput.yaml", "a") as fh:
        fh.write("  val-0302: 2024-03-02T12:00:00Z\n")
    fixed = run(src, tmp_path)
    assert fixed.exit_code == 0, fixed.output
    assert "val-0302" not in fixed.stdout and "Data health" not in fixed.stdout
    hosts, times = actions()
    assert hosts["gpu002"] == "drain_after_job" and times == [(datetime(2024, 3, 2, 12),)]
