from __future__ import annotations

import os
from pathlib import Path

import pytest

from analysis.accounting import account
from analysis.hosts import host_from_path
from analysis.lines import read_lines
from analysis.model import IngestOptions, ParseContext

REPO = Path(__file__).resolve().parents[1]
DATASETS = REPO.parent / "shared" / "datasets"
FIXTURES = REPO / "tests" / "fixtures"
# pytest -n 2 runs two workers on two cores: one torch thread each (see analysis.threads)
os.environ.setdefault("GOODPUT_TORCH_THREADS", "1")


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
