"""The source registry (analysis/sources.py): every declared source has what ingest, the accounting, `goodput
check` and Dagster need, and a source added at run time (one parser module, one declaration) is read by all
of them."""
import importlib
import inspect
import json
import os
import sys
from datetime import datetime

import pytest
from click.testing import CliRunner
from dagster import DagsterInstance, materialize

from analysis import sources, sql, warehouse
from analysis.ingest import contract
from analysis.ingest.check import check_directory
from analysis.ingest.engine import ingest_directory
from analysis.sources import SOURCES, Source
from assets.ingest import ingest_asset
from assets.resources import LogSources, Warehouse
from pipelines.cli import main
from pipelines.definitions import all_assets, all_checks
from tests.test_sacct_parser import HEADER, row



def _same_parameters(parser, protocol, name) -> bool:
    """The module's function takes the parameters the Protocol names (runtime_checkable checks only that the
    attribute exists)."""
    theirs = list(inspect.signature(getattr(parser, name)).parameters)
    ours = list(inspect.signature(getattr(protocol, name)).parameters)[1:]  # without self
    return theirs == ours


def test_every_declared_source_has_a_parser_tables_an_asset_and_accounting(tmp_path):
    con = warehouse.connect(tmp_path / "w.duckdb")
    columns = {}
    for table, column in con.execute("SELECT table_name, column_name FROM information_schema.columns").fetchall():
        columns.setdefault(table, set()).add(column)
    assets = {a.key.to_user_string(): a for a in all_assets}
    checks = {(spec.asset_key.to_user_string(), spec.name) for defn in all_checks for spec in defn.check_specs}
    accounting, delete = sql.load("ingest/accounting_check_run"), sql.load("ingest/delete_files_rows")
    for s in SOURCES.values():
        parser = importlib.import_module(s.parser)
        assert isinstance(parser, contract.Parser) and _same_parameters(parser, contract.Parser, "parse"), s.folder
        for protocol, name in contract.ENTRY_POINTS.items():
            assert not isinstance(parser, protocol) or _same_parameters(parser, protocol, name), (s.folder, name)
        for table in s.tables:
            assert {"file", "line_no"} <= columns.get(table, set()), (s.folder, table)
            assert f'FROM "{table}" WHERE' in accounting and f'DELETE FROM "{table}" WHERE' in delete, table
        assert s.asset in assets and assets[s.asset].group_names_by_key[assets[s.asset].key] == "ingest", s.folder
        assert {(s.asset, "lines_accounted"), (s.asset, "not_all_rejected")} <= checks, s.folder
        assert s.missing, s.folder
        if s.names_hosts:  # `goodput check` reads the hosts its rows name
            assert "host" in columns[s.tables[0]], s.folder
        if s.tables[0] == "node_events":  # its rows are told apart from other sources' by their source column
            assert s.events, s.folder
        for statement in filter(None, (s.volume, s.sample)):
            sql.load(statement)
    assert len({s.asset for s in SOURCES.values()}) == len(SOURCES)
    aliases = [a for s in SOURCES.values() for a in s.aliases]
    assert len(set(aliases)) == len(aliases) and not set(aliases) & set(SOURCES)
    con.close()


def test_a_registered_source_is_rejected_without_ddl_for_a_new_table():
    with pytest.raises(ValueError, match="no DDL"):
        sources.register(Source("toy", "toy_parser", ("toy_rows",), "toy_ingest", "toy readings"))
    with pytest.raises(ValueError, match="already declared"):
        sources.register(Source("kernel", "toy_parser", ("node_events",), "toy_ingest", "toy readings"))
    with pytest.raises(ValueError, match="SQL name"):
        Source("toy", "toy_parser", ("toy rows; DROP TABLE jobs",), "toy_ingest", "toy readings")
    assert "toy" not in SOURCES


TOY_PARSER = '''
import polars as pl

from analysis.ingest.contract import ParseResult
from analysis.ingest.lines import make_rejects


def parse(lines, ctx):
    """`toy <value>` lines are readings of the host the file is named after; blank lines are skipped."""
    blank = lines["text"].str.strip_chars() == ""
    good = lines.filter(lines["text"].str.starts_with("toy "))
    bad = lines.filter(~lines["text"].str.starts_with("toy ") & ~blank)
    rows = good.select(pl.col("text").str.slice(4).alias("value"), pl.lit(ctx.host_hint).alias("host"), "line_no")
    return ParseResult(tables={"toy_rows": rows}, rejects=make_rejects(bad["line_no"], bad["text"], "not a toy line"),
                       skipped=int(blank.sum()), format="toy")
'''


@pytest.fixture
def toy(tmp_path, monkeypatch):
    """A toy source: a parser module and a DDL file in a temporary folder, and one declaration."""
    plugin = tmp_path / "plugin"
    plugin.mkdir()
    (plugin / "goodput_toy_parser.py").write_text(TOY_PARSER)
    (plugin / "toy.sql").write_text("CREATE TABLE IF NOT EXISTS toy_rows (value VARCHAR, host VARCHAR, "
                                    "file VARCHAR, line_no BIGINT);\n")
    monkeypatch.syspath_prepend(str(plugin))
    declared = sources.register(Source("toy", "goodput_toy_parser", ("toy_rows",), "toy_readings",
                                       "toy readings are missing", names_hosts=True, ddl=plugin / "toy.sql"))
    src = tmp_path / "src"
    (src / "toy").mkdir(parents=True)
    (src / "toy" / "gpu001.log").write_text("toy 1\ntoy 2\n\nnot toy\n")
    (src / "toy" / "gpu099.log").write_text("toy 3\n")  # a host that ran no Slurm job
    (src / "slurm").mkdir()
    (src / "slurm" / "sacct.txt").write_text(HEADER + "\n" + row("1", nodes="gpu001") + "\n")
    yield declared, src
    sources.unregister("toy")
    sys.modules.pop("goodput_toy_parser", None)


def test_a_toy_source_is_ingested_accounted_checked_and_materialised(toy, tmp_path):
    declared, src = toy
    con = warehouse.connect(tmp_path / "w.duckdb")
    outcomes = {o.path.rsplit("/", 1)[-1]: o for o in ingest_directory(con, src).outcomes if o.source == "toy"}
    assert {n: (o.status, o.lines, o.rows, o.rejects) for n, o in outcomes.items()} == {
        "gpu001.log": ("ok", 4, 2, 1), "gpu099.log": ("ok", 1, 1, 0)}
    assert con.sql("SELECT host, value FROM toy_rows ORDER BY value").fetchall() == [
        ("gpu001", "1"), ("gpu001", "2"), ("gpu099", "3")]
    # the accounting reads toy_rows: the lines stored there are found, and a lost one is noticed
    accounting = {"source": "toy", "since": datetime.min}
    assert sql.query(con, "ingest/accounting_check_run", accounting).height == 0
    con.execute("DELETE FROM toy_rows WHERE value = '3'")
    lost = sql.query(con, "ingest/accounting_check_run", accounting)
    assert lost["path"].to_list() == [str(src.resolve() / "toy" / "gpu099.log")]

    toy_check = {c.folder: c for c in check_directory(src)[0]}["toy"]
    assert (toy_check.verdict, toy_check.files, toy_check.rows, toy_check.rejects) == ("warning", 2, 3, 1)
    assert toy_check.unmatched_hosts == ["gpu099"] and toy_check.sample[0]["value"] == "1"
    out = CliRunner().invoke(main, ["check", "--source", str(src), "--json"])
    assert [f["verdict"] for f in json.loads(out.output)["folders"] if f["folder"] == "toy"] == ["warning"]

    # a changed file's old rows are deleted before its new ones are written
    (src / "toy" / "gpu001.log").write_text("toy 5\n")
    ingest_directory(con, src, sources=["toy"])
    assert con.sql("SELECT host, value FROM toy_rows ORDER BY value").fetchall() == [("gpu001", "5")]
    con.close()

    db = tmp_path / "dagster.duckdb"
    asset, *checks = ingest_asset(declared)
    resources = {"warehouse": Warehouse(db_path=str(db)), "sources": LogSources(source_dir=str(src))}
    result = materialize([asset, *checks], instance=DagsterInstance.ephemeral(), resources=resources)
    assert result.success
    [materialization] = result.asset_materializations_for_node("toy_readings")
    assert (materialization.metadata["files"].value, materialization.metadata["rows_added"].value) == (2, 2)
    assert sorted((e.check_name, e.passed) for e in result.get_asset_check_evaluations()) == [
        ("lines_accounted", True), ("not_all_rejected", True)]


# -- the checklist of docs/architecture.md, followed literally in a copy of the checkout ---------------------------
CHECKLIST_PARSER = '''"""`gauge <ISO time>` lines: a reading of the host the file is named after, and a node event at that time."""
import polars as pl

from analysis.ingest.contract import ParseResult
from analysis.ingest.lines import make_rejects


def parse(lines, ctx):
    blank = lines["text"].str.strip_chars() == ""
    when = lines["text"].str.slice(6).str.to_datetime("%Y-%m-%dT%H:%M:%S", strict=False)
    ok = lines["text"].str.starts_with("gauge ") & when.is_not_null()
    good = lines.filter(ok).with_columns(time=when.filter(ok))
    bad = lines.filter(~ok & ~blank)
    rows = good.select(pl.col("text").str.slice(6).alias("value"), pl.lit(ctx.host_hint).alias("host"), "line_no")
    events = good.select(pl.col("time").alias("event_time"), pl.lit(ctx.host_hint).alias("host"),
                         pl.lit("gauge").alias("source"), pl.lit("gauge").alias("kind"), "line_no")
    return ParseResult(tables={"gauge_rows": rows, "node_events": events}, skipped=int(blank.sum()), format="gauge",
                       rejects=make_rejects(bad["line_no"], bad["text"], "not a gauge line"))
'''
CHECKLIST_TEST = '''"""Step 6 of the checklist: the gauge source's fixture, parsed and ingested, every line accounted for."""
from analysis import warehouse
from analysis.ingest.engine import ingest_directory
from tests.conftest import FIXTURES


def test_the_gauge_fixture_is_ingested(tmp_path):
    con = warehouse.connect(tmp_path / "w.duckdb")
    [outcome] = [o for o in ingest_directory(con, FIXTURES / "gauge").outcomes if o.source == "gauge"]
    assert (outcome.status, outcome.lines, outcome.rows, outcome.rejects) == ("ok", 4, 4, 1)
    assert con.execute("SELECT count(*) FROM node_events WHERE source = 'gauge'").fetchall() == [(2,)]
'''
# the structural tests: what a new source must not break (the rest of the suite reads the simulated cluster)
CHECKLIST_TESTS = ("tests/test_gauge.py", "tests/test_asset_graph.py", "tests/test_architecture_doc.py",
                   "tests/test_event_sources.py", "tests/test_import_layers.py", "tests/test_sql_layout.py",
                   "tests/test_settings_defaults.py", "tests/test_docs_links.py", "tests/test_sources.py")


@pytest.mark.skipif(bool(os.environ.get("GOODPUT_CHECKLIST_COPY")), reason="already in the copy")
def test_following_the_checklist_keeps_the_structural_tests_green(tmp_path):
    """docs/architecture.md's "Adding a source", step by step, for a source whose rows also land in node_events,
    in a copy of the checkout: the snapshot and the doc's table regenerated as it says, the tests still pass."""
    import shutil
    import subprocess

    from tests.conftest import REPO

    copy = tmp_path / "goodput"
    shutil.copytree(REPO, copy, ignore=shutil.ignore_patterns(".venv", ".git", "__pycache__", ".pytest_cache", "data",
                                                              "out"))
    # 1. the parser module
    (copy / "analysis" / "ingest" / "parsers" / "gauge.py").write_text(CHECKLIST_PARSER)
    # 2. the declaration: required fields, events (its rows land in node_events), volume (a daily feed)
    registry = copy / "analysis" / "sources.py"
    text = registry.read_text()
    anchor = "\n)\n\n# folder -> declaration"
    assert anchor in text
    registry.write_text(text.replace(anchor, '''
    Source("gauge", "analysis.ingest.parsers.gauge", ("gauge_rows", "node_events"), "gauge_readings",
           "gauge readings are missing", names_hosts=True, events="gauge", volume="ops/daily_volume_events"),''' + anchor))
    # 3. the DDL of its new raw table (node_events has its own)
    with (copy / "sql" / "schema" / "warehouse.sql").open("a") as ddl:
        ddl.write("CREATE TABLE IF NOT EXISTS gauge_rows (value VARCHAR, host VARCHAR, file VARCHAR, line_no BIGINT);\n")
    # 5. the snapshot and the doc's table, regenerated as the checklist says
    python = sys.executable
    env = {**os.environ, "GOODPUT_CHECKLIST_COPY": "1", "PYTHONDONTWRITEBYTECODE": "1"}
    # `python -m tests.test_asset_graph` then `python -m tests.asset_table`, in one process (one import of Dagster)
    both = "import runpy\nfor m in ('tests.test_asset_graph', 'tests.asset_table'): runpy.run_module(m, run_name='__main__')"
    done = subprocess.run([python, "-c", both], cwd=copy, env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr
    snapshot = json.loads((copy / "tests" / "fixtures" / "asset_graph.json").read_text())
    assert "gauge_readings" in snapshot and "gauge_readings" in snapshot["node_events"]["deps"]
    assert "`gauge_readings`" in (copy / "docs" / "architecture.md").read_text()
    # 6. a test with a fixture
    fixture = copy / "tests" / "fixtures" / "gauge" / "gauge"
    fixture.mkdir(parents=True)
    (fixture / "gpu001.log").write_text("gauge 2024-03-01T00:00:00\n\nnot gauge\ngauge 2024-03-01T01:00:00\n")
    (copy / "tests" / "test_gauge.py").write_text(CHECKLIST_TEST)
    done = subprocess.run([python, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "no:xdist", *CHECKLIST_TESTS],
                          cwd=copy, env=env, capture_output=True, text=True, timeout=1200)
    assert done.returncode == 0, done.stdout[-6000:] + done.stderr[-2000:]
