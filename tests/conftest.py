from __future__ import annotations

import os
from pathlib import Path

import pytest

from analysis.ingest.accounting import account
from analysis.ingest.contract import IngestOptions, ParseContext
from analysis.ingest.hosts import host_from_path
from analysis.ingest.lines import read_lines
from tests.shared import shared_build, simulated_warehouse

REPO = Path(__file__).resolve().parents[1]
DATASETS = REPO.parent / "shared" / "datasets"
FIXTURES = REPO / "tests" / "fixtures"
# pytest -n 2 runs two workers on two cores: one torch thread each (see analysis.threads)
os.environ.setdefault("GOODPUT_TORCH_THREADS", "1")

# Every module of more than a few seconds, longest first (wall seconds per module under `make test-cpu`'s
# timeline, tests.cpu_times, 2026-11-29): started first so the two workers finish together (longest first). `make
# test` runs `--dist loadscope --no-loadscope-reorder`: each module's tests on one worker (a module fixture is
# built once), modules handed out in this order. Unlisted modules (each under ~3 s) follow in their usual order:
# a mid-sized module left there (test_snapshot, test_hostile_input) ran last and kept one core busy alone.
# (loadgroup would group finer, but pytest-xdist 3.8's group suffix is lost on pytest 9: every test then
# scheduled alone.) test_lemon_accuracy is a bench (`make bench`): listed first for that run.
SLOW_FIRST = ("test_lemon_accuracy.py", "test_node_models.py", "test_fleet.py", "test_increment.py", "test_pipeline.py",
              "test_telemetry_detect.py", "test_derived_builds.py", "test_report.py", "test_unchanged.py",
              "test_partial_day.py", "test_degrade.py", "test_nightly.py", "test_cli_run_coverage.py",
              "test_fleet_report.py", "test_fuzz_strict.py", "test_cli_forget.py", "test_wheel.py",
              "test_criteria_superbench.py", "test_model_cadence.py", "test_cli_run_errors.py", "test_sources.py",
              "test_joblogs.py", "test_hostile_input.py", "test_snapshot.py", "test_survival_eval.py",
              "test_cli_usability.py", "test_commands_mean_it.py", "test_fuzz.py", "test_node_history.py",
              "test_criteria_sim.py", "test_alerts.py", "test_ingest_memory.py", "test_attribution.py",
              "test_taxonomy.py", "test_lifecycle.py", "test_ingest.py", "test_cli_check.py", "test_simulate.py",
              "test_telemetry_shapes.py", "test_simulate_states.py", "test_simulate_stragglers.py",
              "test_ingest_batch.py", "test_import_layers.py", "test_stragglers_run.py", "test_clean_evidence.py",
              "test_attribution_increment.py", "test_job_runs_increment.py", "test_step_times_parser.py",
              "test_lines.py", "test_metrics.py")


# Tests write only into temporary folders: the checkout (out/, data/, any file in it, ignored by git or not) is
# the same after the run as before it, or the run fails naming what changed. Checked by the controller (with
# xdist) or the only process (without), around the whole session.
CHECKOUT_SKIP = (".git", ".venv", "__pycache__", ".pytest_cache")
_CHECKOUT, _WROTE = pytest.StashKey[dict](), pytest.StashKey[list]()


def checkout_files(root: Path = REPO) -> dict[str, tuple[int, int]]:
    """Every file under ``root`` (but the VCS, the venv and Python's caches) -> (size, mtime_ns)."""
    files = {}
    for folder, dirs, names in os.walk(root):
        dirs[:] = [d for d in dirs if d not in CHECKOUT_SKIP and not d.endswith(".egg-info")]
        for name in names:
            path = os.path.join(folder, name)
            try:
                st = os.lstat(path)
            except FileNotFoundError:  # removed while we looked
                continue
            files[os.path.relpath(path, root)] = (st.st_size, st.st_mtime_ns)
    return files


def changed_files(before: dict, after: dict) -> list[str]:
    return sorted(p for p in before.keys() | after.keys() if before.get(p) != after.get(p))


def pytest_sessionstart(session):
    if not hasattr(session.config, "workerinput"):
        session.config.stash[_CHECKOUT] = checkout_files()


def pytest_sessionfinish(session, exitstatus):
    before = session.config.stash.get(_CHECKOUT, None)
    if before is None:
        return
    changed = changed_files(before, checkout_files())
    session.config.stash[_WROTE] = changed
    if changed and session.exitstatus == pytest.ExitCode.OK:
        session.exitstatus = pytest.ExitCode.TESTS_FAILED


def pytest_terminal_summary(terminalreporter, exitstatus, config):
    changed = config.stash.get(_WROTE, [])
    if changed:
        terminalreporter.write_sep("=", "tests wrote into the checkout", red=True)
        terminalreporter.write_line(f"{len(changed)} file(s) under {REPO} were created, changed or removed by the "
                                    "tests (write to tmp_path instead):")
        for path in changed[:30]:
            terminalreporter.write_line(f"  {path}")


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config, items):
    """Longest first, each module's tests in their order."""
    rank = {name: i for i, name in enumerate(SLOW_FIRST)}
    items.sort(key=lambda item: rank.get(item.path.name, len(SLOW_FIRST)))  # stable


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
    """`goodput run` on the demo source, once per test run for every worker (shared_build), with its published
    snapshot and --out beside it: read it (read-only connections: the workers may read it at once), or copy it
    before writing."""
    root, _ = shared_build(tmp_path_factory, "demo_run", _demo_run)
    return root / "w.duckdb"


def _demo_run(root: Path) -> None:
    from click.testing import CliRunner

    from pipelines.cli import DEMO_SOURCE, main

    result = CliRunner().invoke(main, ["run", "--source", str(DEMO_SOURCE), "--db", str(root / "w.duckdb"),
                                       "--out", str(root / "out"), "-q"])
    assert result.exit_code == 0, result.output


def parse_file(parse, path: Path, source: str, options: IngestOptions | None = None, host_hint: str | None = "__auto__"):
    """Read ``path`` and run ``parse`` on it; assert the lines are all accounted for."""
    lines = read_lines(path)
    hint = host_from_path(Path(source) / path.name) if host_hint == "__auto__" else host_hint
    ctx = ParseContext(path=path, source=source, host_hint=hint, options=options or IngestOptions())
    result = parse(lines.lines, ctx)
    counts = account(result, lines)
    return result, counts


def _cpu_seconds() -> float:
    import resource

    own, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + kids.ru_utime + kids.ru_stime


_CPU_INTO = pytest.StashKey[str]()


def pytest_configure(config):
    """The process that runs the tests takes GOODPUT_TEST_CPU out of its environment: a test's own pytest run
    (test_sources' checklist) is counted in that test's CPU seconds (its child's), not again as tests of its own.
    An xdist controller runs no test and leaves it for the workers it starts."""
    controller = not hasattr(config, "workerinput") and bool(getattr(config.option, "numprocesses", None))
    into = os.environ.get("GOODPUT_TEST_CPU") if controller else os.environ.pop("GOODPUT_TEST_CPU", None)
    if into:
        config.stash[_CPU_INTO] = into


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item, nextitem):
    """GOODPUT_TEST_CPU=FILE: each test's CPU seconds (its setup, fixtures included, call and teardown, with the
    processes it started) appended to FILE as `nodeid<TAB>seconds<TAB>worker<TAB>start<TAB>end` (wall clock, epoch
    seconds); on a shared machine CPU seconds, unlike --durations' wall seconds, say what a test costs (make
    test-cpu sums them per module), and the workers' timelines show one left idle while the other finishes."""
    import time

    into = item.config.stash.get(_CPU_INTO, None)
    start, began = (_cpu_seconds(), time.time()) if into else (0.0, 0.0)
    yield
    if into:
        worker = os.environ.get("PYTEST_XDIST_WORKER", "main")
        with open(into, "a") as out:
            out.write(f"{item.nodeid}\t{_cpu_seconds() - start:.2f}\t{worker}\t{began:.2f}\t{time.time():.2f}\n")
