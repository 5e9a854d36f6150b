"""Every command means what it says (issue 34): an option a command would ignore, or two that conflict, is a
usage error naming them; one meaning per option name (--db-dir the fleet's warehouses, --fleet its source);
hints repeat the --db the user gave; `check` judges a source by `run`'s rules, with its exit codes; one
spelling of NULL and no raw float in the terminal; the wheel builds without setuptools' warnings and ships
its data files."""
from __future__ import annotations

import importlib.util
import json
import re
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest
from click.testing import CliRunner

from analysis import warehouse
from analysis.fmt import fmt_float
from analysis.package_files import demo_source
from pipelines.cli import main
from tests.conftest import REPO

DEMO = demo_source()
RAW_FLOAT = re.compile(r"\d\.\d{5,}")  # more than 4 decimals: a float printed as Python holds it


def invoke(*args: str):
    return CliRunner().invoke(main, [str(a) for a in args])


@pytest.fixture(scope="module")
def db(tmp_path_factory) -> Path:
    """The demo sample ingested and derived (metrics too: cluster_failure_rate), without models or reports."""
    from analysis.derive import metrics
    from analysis.derive.taxonomy import load
    from analysis.ingest.engine import ingest_directory
    from assets.pure_builds import build_all

    path = tmp_path_factory.mktemp("mean_it") / "w.duckdb"
    con = warehouse.connect(path)
    try:
        ingest_directory(con, DEMO)
        build_all(con, load(), metrics.MetricsConfig())
    finally:
        con.close()
    return path


def measured_rate(db: Path) -> float:
    con = warehouse.connect(db, read_only=True)
    try:
        return con.execute("SELECT r_per_1000_node_days FROM cluster_failure_rate").fetchone()[0]
    finally:
        con.close()


# -- conflicting or ignored options are usage errors that name them --------------------------------------

@pytest.mark.parametrize("args, named", [
    (["--from-db", "--failure-rate", "3"], ["--failure-rate", "--from-db"]),
    (["--db", "somewhere.duckdb"], ["--db", "--from-db"]),
    (["--target", "0.8"], ["--target", "--sweep"]),
    (["--sweep", "--checkpoint-min", "30"], ["--sweep", "--checkpoint-min"]),
    (["--sweep", "--monte-carlo"], ["--sweep", "--monte-carlo"]),
    (["--sweep", "--runtime-days", "3"], ["--sweep", "--runtime-days"]),
    (["--sweep", "--queue-min", "10"], ["--sweep", "--queue-min"]),
])
def test_ettr_refuses_what_it_would_ignore(args, named):
    result = invoke("ettr", *args)
    assert result.exit_code == 2, result.output
    error = result.output.strip().splitlines()[-1]
    assert error.startswith("Error: ") and all(n in error for n in named), error


def test_ettr_from_db_uses_the_measured_rate(db):
    rate = measured_rate(db)
    one = invoke("ettr", "--from-db", "--db", db)
    assert one.exit_code == 0, one.output
    assert f"r = {fmt_float(rate, 2, sep=True)} per 1,000 node-days (measured)" in one.output
    sweep = invoke("ettr", "--sweep", "--from-db", "--db", db, "--target", "0.8", "--json")
    assert sweep.exit_code == 0 and round(rate, 3) in {r["failures_per_1000_node_days"]
                                                       for r in json.loads(sweep.output)["sweep"]}


@pytest.mark.parametrize("args, named", [
    (["--source", "x", "--db-dir", "y"], ["--db-dir", "--fleet"]),
    (["--source", "x", "--jobs", "2"], ["--jobs", "--fleet"]),
    (["--source", "x", "--fleet", "y"], ["--source", "--fleet"]),
    (["--fleet", "y", "--cluster", "a"], ["--fleet", "--cluster"]),
])
def test_run_refuses_options_of_the_other_layout(args, named, tmp_path):
    result = invoke("run", *args, "--out", tmp_path / "out")
    assert result.exit_code == 2, result.output
    assert all(n in result.output.strip().splitlines()[-1] for n in named), result.output


@pytest.mark.parametrize("args, named", [
    (["--csv", "--json"], ["--csv", "--json"]),
    (["--json", "--max-rows", "5"], ["--max-rows", "--json"]),
    (["--db-dir", "."], ["--db", "--db-dir"]),
])
def test_sql_refuses_conflicting_options(args, named, db):
    result = invoke("sql", "--db", db, *args, "SELECT 1")
    assert result.exit_code == 2, result.output
    assert all(n in result.output.strip().splitlines()[-1] for n in named), result.output


# -- check applies run's rules, with run's exit codes --------------------------------------------------------

def _error_line(result) -> str:
    return next(line for line in result.output.splitlines() if line.startswith("Error: "))


def _run_and_check(src: Path, tmp_path: Path):
    ran = invoke("run", "--source", src, "--db", tmp_path / "w.duckdb", "--out", tmp_path / "out", "-q")
    checked = invoke("check", "--source", src)
    return ran, checked


def test_a_source_without_slurm_fails_check_and_run_alike(tmp_path):
    """run refuses it before reading a file; check says the same, reads the other folders all the same, and
    fails slurm/ (exit 1 both)."""
    src = tmp_path / "src"
    shutil.copytree(DEMO / "kernel", src / "kernel")
    shutil.copytree(DEMO / "slurm", src / "sacct")  # a misnamed slurm/
    ran, checked = _run_and_check(src, tmp_path)
    assert ran.exit_code == checked.exit_code == 1, (ran.output, checked.output)
    why = _error_line(ran).removeprefix("Error: ")
    assert "has no file in slurm/" in why and "did you mean slurm/?" in why
    assert f"FAILED: {why}" in checked.output.splitlines()
    assert re.search(r"^slurm/\s+FAILED", checked.output, re.M) and re.search(r"^kernel/\s+OK", checked.output, re.M)
    assert not (tmp_path / "w.duckdb").exists()  # refused before any work
    folders = json.loads(invoke("check", "--source", src, "--json").output)["folders"]
    assert folders[0]["folder"] == "slurm" and folders[0]["verdict"] == "failed" and folders[0]["problems"] == [why]


@pytest.mark.parametrize("make", ["empty", "missing"])
def test_an_empty_or_missing_source_fails_check_and_run_alike(make, tmp_path):
    src = tmp_path / "src"
    if make == "empty":
        src.mkdir()
    ran, checked = _run_and_check(src, tmp_path)
    assert ran.exit_code == checked.exit_code == 1, (ran.output, checked.output)
    assert _error_line(ran) == _error_line(checked)
    assert ("holds no files" if make == "empty" else "does not exist") in _error_line(checked)


@pytest.mark.parametrize("bad, verdict", [(5, "ok"), (25, "warning")])
def test_check_warns_at_the_reject_limit_run_degrades_at(bad, verdict, tmp_path):
    """`goodput run` degrades a source rejecting over 2% of its lines and at least 20 (data_health): 5 bad lines
    of 9 do not (a handful of odd lines), 25 of 29 do; check says so with the counts and the limits."""
    from analysis.commands.data_health import MAX_REJECT_RATE, MIN_REJECTS

    src = tmp_path / "src"
    shutil.copytree(DEMO, src)
    events = next((src / "slurm_events").glob("*.txt"))
    events.write_text(events.read_text() + "gpu001|not a time|Unknown|DRAIN|x|root(0)\n" * bad)
    result = invoke("check", "--source", src, "--json")
    assert result.exit_code == 0, result.output
    folder = next(f for f in json.loads(result.output)["folders"] if f["folder"] == "slurm_events")
    assert (folder["verdict"], folder["rejects"]) == (verdict, bad), folder
    if verdict == "warning":
        (why,) = folder["warnings"]
        assert f"{bad} lines" in why and f"{MAX_REJECT_RATE:.1%}" in why and f"{MIN_REJECTS} lines" in why, why
        assert "TimeStart" in why  # the most frequent reason
        text = invoke("check", "--source", src).output
        assert re.search(r"^slurm_events/\s+WARNING", text, re.M) and f"warning: {why[:40]}" in text


# -- one meaning per option name; fleet messages name --db-dir ------------------------------------------

def test_a_missing_fleet_warehouse_folder_names_db_dir(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # no data/fleet here
    for args in (["fleet", "report"], ["fleet", "export", "--parquet", "lake"], ["sql", "--db-dir", "nope", "SELECT 1"]):
        result = invoke(*args)
        assert result.exit_code == 2 and "--db-dir" in _error_line(result), (args, result.output)
    default = invoke("fleet", "report")
    assert "data/fleet (the default --db-dir) is not a folder" in default.output
    (tmp_path / "empty").mkdir()
    empty = invoke("fleet", "report", "--db-dir", "empty")
    assert empty.exit_code == 2 and "holds no cluster warehouse" in empty.output and "--db-dir" in empty.output


def test_db_dir_is_the_warehouses_and_fleet_the_source_everywhere(db, tmp_path):
    fleet = tmp_path / "db"
    fleet.mkdir()
    for cluster in ("a", "b"):
        shutil.copyfile(db, fleet / f"{cluster}.duckdb")
    query = "SELECT cluster, count(*) AS n FROM jobs GROUP BY ALL ORDER BY cluster"
    new = invoke("sql", "--db-dir", fleet, "--json", query)
    assert new.exit_code == 0, new.output
    assert [r["cluster"] for r in json.loads(new.output)] == ["a", "b"]
    old = invoke("sql", "--fleet", fleet, "--csv", query)  # the old spelling still works, and says what to use
    (note,) = [line for line in old.output.splitlines() if "deprecated" in line]
    assert old.exit_code == 0 and "--fleet is deprecated here, use --db-dir" in note, old.output
    assert old.output.replace(note + "\n", "") == invoke("sql", "--db-dir", fleet, "--csv", query).output
    # --db-dir: the folder of the clusters' warehouses on every command that takes it; --fleet: a source
    # folder on run; sql has no --fleet of its own any more
    from tests.test_docs_commands import _every_command

    for name, command in _every_command().items():
        for param in command.params:
            if "--db-dir" in param.opts:
                assert "warehouses" in param.help, (name, param.help)
            if "--fleet" in param.opts:
                assert name in ("run", "simulate"), name
    assert "source folder" in next(p.help for p in main.commands["run"].params if p.name == "fleet")


def test_the_fleet_report_links_cluster_reports_from_another_out(db, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("GOODPUT_OUT", raising=False)
    (tmp_path / "db").mkdir()
    shutil.copyfile(db, tmp_path / "db" / "a.duckdb")
    report = tmp_path / "runout" / "a" / "reports" / "reliability-2024-03-02.html"
    report.parent.mkdir(parents=True)
    report.write_text("<html>a's report</html>")
    linked = invoke("fleet", "report", "--db-dir", "db", "--out", "elsewhere", "--reports", "runout")
    assert linked.exit_code == 0, linked.output
    html = (tmp_path / "elsewhere" / "fleet" / "fleet-report.html").read_text()
    assert 'href="../../runout/a/reports/reliability-2024-03-02.html"' in html
    unlinked = invoke("fleet", "report", "--db-dir", "db", "--out", "elsewhere")
    assert unlinked.exit_code == 0, unlinked.output
    assert "Not linked" in unlinked.output and ": a;" in unlinked.output and "--reports" in unlinked.output
    assert "reliability-2024-03-02.html" not in (tmp_path / "elsewhere" / "fleet" / "fleet-report.html").read_text()


# -- hints repeat the options the user gave -----------------------------------------------------------------

def test_forgets_hint_repeats_the_db_given(db, tmp_path, monkeypatch):
    result = invoke("forget", "--db", db, str(tmp_path / "never-ingested.log"))
    assert result.exit_code == 1
    assert f'goodput sql --db {db} "SELECT path FROM ingested_files"' in result.output, result.output
    monkeypatch.setenv("GOODPUT_DB", str(db))  # the warehouse a bare command reads: the hint needs no --db
    bare = invoke("forget", str(tmp_path / "never-ingested.log"))
    assert 'goodput sql "SELECT path FROM ingested_files"' in bare.output, bare.output


def test_follow_up_renders_the_options_a_paste_needs(tmp_path, monkeypatch):
    from analysis.hints import follow_up

    monkeypatch.delenv("GOODPUT_DB", raising=False)
    assert follow_up("sql", "SELECT 1", db=Path("data/warehouse.duckdb")) == 'goodput sql "SELECT 1"'
    assert follow_up("forget", "PATH", db=tmp_path / "w.duckdb") == f"goodput forget --db {tmp_path / 'w.duckdb'} PATH"
    assert follow_up("run", fleet="DIR", db_dir=Path("data/fleet")) == "goodput run --fleet DIR"
    assert follow_up("sql", "SELECT 'x'", db_dir=tmp_path) == f'goodput sql --db-dir {tmp_path} "SELECT \'x\'"'
    assert follow_up("why", "a job", db=Path("my db.duckdb")) == 'goodput why --db "my db.duckdb" "a job"'


# -- numbers: one NULL, no raw floats ------------------------------------------------------------------------

QUERY = "SELECT 6.0 / 7 AS share, NULL AS nothing, r_per_1000_node_days AS r, [1.0 / 3, NULL] AS l FROM cluster_failure_rate"


def test_sql_prints_one_null_spelling_and_no_raw_float(db):
    table = invoke("sql", "--db", db, QUERY)
    vertical = invoke("sql", "--db", db, "-x", QUERY)
    assert table.exit_code == vertical.exit_code == 0, table.output + vertical.output
    for out in (table.output, vertical.output):
        assert "NULL" in out and not re.search(r"\bnull\b", out), out
        assert not RAW_FLOAT.search(out), out
        assert "0.8571" in out and "[0.3333, NULL]" in out
    assert re.search(r"^nothing\s+\| NULL$", vertical.output, re.M)
    csv = invoke("sql", "--db", db, "--csv", QUERY).output.splitlines()[1]  # the machine formats keep every digit
    assert csv.startswith("0.8571428571428571,,")
    record = json.loads(invoke("sql", "--db", db, "--json", QUERY).output)[0]
    assert record["nothing"] is None and record["r"] == pytest.approx(measured_rate(db))


@pytest.mark.parametrize("args", [
    ["--gpus", "100", "--failure-rate", "9.93168", "--monte-carlo"],
    ["--gpus", "1000", "--gpus-per-node", "3", "--failure-rate", "0.123456", "--runtime-days", "2.123456"],
    ["--sweep", "--failure-rate", "9.93168", "--target", "0.912345"],
    ["--from-db"],
    ["--sweep", "--from-db"],
])
def test_ettr_prints_no_raw_float(args, db):
    needs_db = ["--db", db] if "--from-db" in args else []
    result = invoke("ettr", *args, *needs_db)
    assert result.exit_code == 0, result.output
    assert not RAW_FLOAT.search(result.output), result.output


def test_criteria_says_what_its_margins_mean(db, tmp_path):
    scratch = tmp_path / "w.duckdb"
    shutil.copyfile(db, scratch)
    result = invoke("criteria", "--db", scratch, "--out", tmp_path / "criteria", "--skip-noisy")
    assert result.exit_code == 0, result.output
    assert "margin, per method" in result.output and "-: it called no node defective" in result.output
    assert not RAW_FLOAT.search(result.output), result.output


# -- the wheel builds without setuptools' warnings and ships the data files ----------------------------------

NOT_BUILT = ("tests", "bench", "docs", "data", "out", "build", ".*", "*.egg-info", "__pycache__", "*.duckdb*")
PACKAGES = ("pipelines", "assets", "analysis", "reports", "sql", "taxonomy", "catalog", "schemas", "samples")
DATA = (".sql", ".yaml", ".j2", ".json", ".html")


def test_the_wheel_builds_without_a_warning_and_ships_its_data(tmp_path):
    # found, not imported: importing setuptools here, in a worker where an earlier module's library already
    # imported the standard library's distutils, fails in setuptools' own distutils check (the build is pip's,
    # in a process of its own)
    if importlib.util.find_spec("setuptools") is None:
        pytest.skip("setuptools is not installed")
    src = tmp_path / "src"
    shutil.copytree(REPO, src, ignore=shutil.ignore_patterns(*NOT_BUILT))
    built = subprocess.run([sys.executable, "-m", "pip", "wheel", str(src), "--no-deps", "--no-build-isolation",
                            "--no-index", "-w", str(tmp_path / "dist")], capture_output=True, text=True, timeout=300)
    said = built.stdout + built.stderr
    assert built.returncode == 0, said[-3000:]
    assert "BuildBackendWarning" not in said and "absent from the `packages`" not in said, said[-3000:]
    (wheel,) = (tmp_path / "dist").glob("goodput-*.whl")
    shipped = set(zipfile.ZipFile(wheel).namelist())
    wanted = {p.relative_to(src).as_posix() for top in PACKAGES for p in (src / top).rglob("*")
              if p.is_file() and (p.suffix in DATA or top == "samples")}
    assert wanted and not wanted - shipped, sorted(wanted - shipped)[:20]
    assert "samples/demo_source/slurm/sacct-2024-03-01.txt" in shipped and "sql/report/node_actions.sql" in shipped
    assert not any("__pycache__" in name for name in shipped)


def test_make_installs_without_setuptools_notice():
    """`make demo` / `make test` install editable: setuptools' generic notice for flat layouts ("Editable
    installation ... folders with the same name") is filtered in the Makefile's install line, so a fresh clone's
    first lines are goodput's (checked by hand: `PYTHONWARNINGS='ignore:Editable installation' pip install -e .`
    prints nothing; without the filter, 10 lines of BuildBackendWarning)."""
    line = next(l for l in (REPO / "Makefile").read_text().splitlines() if "pip install" in l and "-e '.[test]'" in l)
    assert "PYTHONWARNINGS='ignore:Editable installation'" in line and "--quiet" in line
