from __future__ import annotations

import os
from pathlib import Path

import pytest

from analysis.accounting import account
from analysis.hosts import host_from_path
from analysis.lines import read_lines
from analysis.model import IngestOptions, ParseContext
from tests.shared import shared_build, simulated_warehouse

REPO = Path(__file__).resolve().parents[1]
DATASETS = REPO.parent / "shared" / "datasets"
FIXTURES = REPO / "tests" / "fixtures"
# pytest -n 2 runs two workers on two cores: one torch thread each (see analysis.threads)
os.environ.setdefault("GOODPUT_TORCH_THREADS", "1")

# The costliest tests and modules, most expensive first (CPU seconds on one core, measured with -n 2): run
# first so the two workers finish together (longest first). Modules whose tests share a module fixture stay
# on one worker with `--dist loadgroup` (make test), so the fixture is built once. Unlisted modules follow
# in their usual order.
SLOW_FIRST = ("test_lemon_accuracy.py", "test_node_models.py", "test_telemetry_detect.py", "test_pipeline.py",
              "test_partial_day.py", "test_nightly.py", "test_shared_clusters", "test_report.py", "test_simulate.py",
              "test_degrade.py", "test_cli_run_coverage.py", "test_cli_forget.py", "test_cli_run_errors.py",
              "test_derived_builds.py", "test_simulate_states.py", "test_criteria_sim.py", "test_joblogs.py")
# one xdist group per module fixture (or shared cluster) that is costly to build; lemon_accuracy's two
# seeds are not grouped: they run side by side, one per worker
GROUPS = {"test_node_models.py": "node_models", "test_telemetry_detect.py": "telemetry_detect",
          "test_attribution.py": "test_shared_clusters", "test_metrics.py": "test_shared_clusters",
          "test_report.py": "report", "test_simulate.py": "simulate", "test_nightly.py": "nightly",
          "test_clean_evidence.py": "clean_evidence", "test_derived_builds.py": "derived_builds",
          "test_cli_sql.py": "cli_sql", "test_cli_check.py": "cli_check"}


def pytest_configure(config):
    # registered by pytest-xdist; declared here too for runs without it (-p no:xdist)
    config.addinivalue_line("markers", "xdist_group(name): run these tests on one xdist worker")


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config, items):
    """Longest first, each module's tests in their order; group the users of a costly module fixture."""
    def rank(item) -> int:
        name = item.path.name
        key = GROUPS.get(name, name)
        return next((i for i, s in enumerate(SLOW_FIRST) if s in (name, key)), len(SLOW_FIRST))

    items.sort(key=rank)  # stable: the order inside a module is kept
    for item in items:
        group = GROUPS.get(item.path.name)
        if group:
            item.add_marker(pytest.mark.xdist_group(group))


@pytest.fixture(scope="session")
def rsc1_256x20(tmp_path_factory):
    """256 nodes x 20 days of rsc1 (seed 1), ingested, attributed and measured: test_attribution and
    test_metrics read it (each from its own copy of the warehouse)."""
    from analysis.simulate.config import preset

    cfg = preset("rsc1", nodes=256, days=20, seed=1, telemetry_jobs=0)
    root, value = shared_build(tmp_path_factory, "rsc1_256x20_s1", lambda r: simulated_warehouse(cfg, r))
    return cfg, root, value


@pytest.fixture
def datasets() -> Path:
    if not DATASETS.is_dir():
        pytest.skip(f"shared datasets not found at {DATASETS}")
    return DATASETS


@pytest.fixture(scope="session")
def demo_warehouse(tmp_path_factory) -> Path:
    """`goodput run` on the demo source, once per session (with its published snapshot): read it, or copy
    it before writing."""
    from click.testing import CliRunner

    from pipelines.cli import DEMO_SOURCE, main

    root = tmp_path_factory.mktemp("demo_run")
    result = CliRunner().invoke(main, ["run", "--source", str(DEMO_SOURCE), "--db", str(root / "w.duckdb"),
                                       "--out", str(root / "out"), "-q"])
    assert result.exit_code == 0, result.output
    return root / "w.duckdb"


def parse_file(parse, path: Path, source: str, options: IngestOptions | None = None, host_hint: str | None = "__auto__"):
    """Read ``path`` and run ``parse`` on it; assert the lines are all accounted for."""
    lines = read_lines(path)
    hint = host_from_path(Path(source) / path.name) if host_hint == "__auto__" else host_hint
    ctx = ParseContext(path=path, source=source, host_hint=hint, options=options or IngestOptions())
    result = parse(lines.lines, ctx)
    counts = account(result, lines)
    return result, counts
