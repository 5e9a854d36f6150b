"""A partial last day (the data ends early in it) does not block the run; a
missing source on a complete day still does (sql/ops/daily_volume_problems.sql)."""
import shutil

import pytest

from analysis.simulate.config import preset
from analysis.simulate.run import simulate
from pipelines.runner import run_pipeline
from tests.shared import quick_telemetry


@pytest.fixture(autouse=True)
def _quick_models():
    with quick_telemetry():  # the runs are judged on data health, not on the telemetry detectors
        yield


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    root = tmp_path_factory.mktemp("partial")
    # 2024-03-01 .. 2024-03-08, every source every day; 24 nodes: enough jobs and faults for each day
    simulate(preset("small", nodes=24, days=8), root / "src")
    return root / "src"


def lone_job_end(src, when: str) -> None:
    """One job that ended at ``when`` on the day after the data, appended to the last dump
    (what the simulator used to write when a fault hit in its last minutes)."""
    last = sorted((src / "slurm").glob("sacct-*.txt"))[-1]
    row = ["4242424", "4242424", "train", "alice", "llm", "learn", "normal", "1000", "FAILED", "1:0", "None",
           "2024-03-08T20:00:00", "2024-03-08T20:00:00", "2024-03-08T20:01:00", when, "04:00:00", "1",
           "billing=96,cpu=96,gres/gpu=8,node=1", "gpu0001", "0", "sbatch x.sh"]
    with last.open("a") as f:
        f.write("|".join(row) + "\n")


def test_a_lone_row_past_the_end_does_not_block(cluster, tmp_path):
    src = tmp_path / "src"
    shutil.copytree(cluster, src)
    lone_job_end(src, "2024-03-09T00:00:30")
    result = run_pipeline(src, tmp_path / "w.duckdb", tmp_path / "out")
    assert result.success, result.report()  # 2024-03-09 holds 30 s of data: 2024-03-08 is judged
    assert result.report_path.name == "reliability-2024-03-09.html"


def test_a_missing_source_on_a_complete_last_day_degrades_the_run(cluster, tmp_path):
    src = tmp_path / "src"
    shutil.copytree(cluster, src)
    (src / "kernel" / "kern-2024-03-08.log").unlink()  # the day is complete: jobs end until near midnight
    result = run_pipeline(src, tmp_path / "w.duckdb", tmp_path / "out")
    assert result.status == "degraded" and result.report_path is not None  # built, and says what it lacks
    assert any("no rows on 2024-03-08 from kernel" in d for d in result.degraded), result.degraded
    assert "kernel/" in result.health["what"].to_list()


def test_a_partial_last_day_judges_the_day_before(cluster, tmp_path):
    src = tmp_path / "src"
    shutil.copytree(cluster, src)
    lone_job_end(src, "2024-03-09T06:00:00")
    (src / "kernel" / "kern-2024-03-08.log").unlink()  # the last complete day lacks kernel logs
    result = run_pipeline(src, tmp_path / "w.duckdb", tmp_path / "out")
    assert result.status == "degraded"
    assert any("kernel" in d for d in result.degraded), result.degraded
