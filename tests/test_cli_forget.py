"""`goodput forget PATH...`: a file's rows, rejects and record leave the
warehouse in one go; derived tables follow on the next `goodput run`."""
import shutil

import duckdb
import pytest
from click.testing import CliRunner

from analysis import sources, warehouse
from analysis.ingest.forget import UnknownPaths, forget
from pipelines.cli import DEMO_SOURCE, main


def run(src, tmp_path):
    result = CliRunner().invoke(main, ["run", "--source", str(src), "--db", str(tmp_path / "w.duckdb"),
                                       "--out", str(tmp_path / "out"), "-q"])
    assert result.exit_code == 0, result.output


def rows_of(db, path) -> dict:
    con = duckdb.connect(str(db), read_only=True)
    try:
        counts = {t: con.execute(f"SELECT count(*) FROM {t} WHERE file = ?", [str(path)]).fetchall()[0][0]
                  for t in (*sources.raw_tables(), "rejects")}
        counts["ingested_files"] = con.execute("SELECT count(*) FROM ingested_files WHERE path = ?",
                                               [str(path)]).fetchall()[0][0]
        counts["classified_events"] = con.execute("SELECT count(*) FROM classified_events WHERE file = ?",
                                                  [str(path)]).fetchall()[0][0]
        return counts
    finally:
        con.close()


@pytest.fixture(scope="module")
def built_once(tmp_path_factory):
    """The demo with one rejected kernel line, run once: its source (at the path the warehouse names), a pristine
    copy of that source, and the run's folder (warehouse, snapshot, models, out)."""
    root = tmp_path_factory.mktemp("forget")
    src = root / "src"
    shutil.copytree(DEMO_SOURCE, src)
    (src / "kernel" / "gpu003.log").write_text((DEMO_SOURCE / "kernel" / "gpu003.log").read_text() + "not a kernel line\n")
    run(src, root / "run")
    shutil.copytree(src, root / "pristine")  # copy2: sizes and mtimes kept, so the files are the ones ingested
    return src, root / "pristine", root / "run"


@pytest.fixture
def built(built_once, tmp_path):
    """Each test as if it had run the pipeline itself: the source as the run read it (restored, since a test
    deletes files from it) and a copy of the run's folder in tmp_path (run(src, tmp_path) runs it again)."""
    src, pristine, ran = built_once
    shutil.rmtree(src)
    shutil.copytree(pristine, src)
    for path in ran.iterdir():
        (shutil.copytree if path.is_dir() else shutil.copy2)(path, tmp_path / path.name)
    return src, tmp_path / "w.duckdb"


def test_forget_a_deleted_file_by_relative_path(built, tmp_path, monkeypatch):
    src, db = built
    gone = src / "kernel" / "gpu003.log"
    before = rows_of(db, gone)
    assert before["node_events"] > 0 and before["rejects"] == 1 and before["classified_events"] > 0
    other = rows_of(db, src / "kernel" / "gpu007.log")
    gone.unlink()
    monkeypatch.chdir(src)
    result = CliRunner().invoke(main, ["forget", "--db", str(db), "kernel/gpu003.log"])
    assert result.exit_code == 0, result.output
    assert f"Removed 1 file(s) from {db}: {before['node_events']} rows and 1 rejects." in result.output
    assert "next `goodput run`" in result.output and "rebuilds them from the raw tables" in result.output
    after = rows_of(db, gone)
    assert all(after[t] == 0 for t in after if t != "classified_events"), after
    assert rows_of(db, src / "kernel" / "gpu007.log") == other
    # derived tables still hold the file's events until the next run rebuilds them, as documented
    assert after["classified_events"] == before["classified_events"]
    run(src, tmp_path)
    assert rows_of(db, gone)["classified_events"] == 0


def test_an_unknown_path_removes_nothing(built):
    src, db = built
    known = src / "kernel" / "gpu003.log"
    before = rows_of(db, known)
    result = CliRunner().invoke(main, ["forget", "--db", str(db), str(known), str(src / "kernel" / "nope.log")])
    assert result.exit_code != 0
    assert "not in the warehouse" in result.output and "nope.log" in result.output and "nothing was removed" in result.output
    assert len(result.output.strip().splitlines()) == 1
    assert rows_of(db, known) == before


def test_a_folder_dry_run_and_a_file_still_on_disk(built):
    src, db = built
    dry = CliRunner().invoke(main, ["forget", "--db", str(db), "--dry-run", str(src / "kernel") + "/"])
    assert dry.exit_code == 0, dry.output
    assert "Would remove 3 file(s)" in dry.output and "Still on disk" in dry.output
    assert rows_of(db, src / "kernel" / "gpu001.dmesg")["node_events"] > 0
    con = warehouse.connect(db)
    try:
        done = forget(con, [str(src / "kernel")])
        assert done.files.height == 3 and done.rows > 0
        assert con.execute("SELECT count(*) FROM node_events WHERE source = 'kernel'").fetchall() == [(0,)]
        with pytest.raises(UnknownPaths):
            forget(con, [str(src / "kernel")])  # already gone
    finally:
        con.close()


def test_a_forgotten_original_lets_its_copy_be_read(tmp_path):
    src = tmp_path / "src"
    shutil.copytree(DEMO_SOURCE, src)
    shutil.copy(src / "kernel" / "gpu003.log", src / "kernel" / "gpu003.log.1")  # a rotated copy
    run(src, tmp_path)
    db = tmp_path / "w.duckdb"
    events = rows_of(db, src / "kernel" / "gpu003.log")["node_events"]
    (src / "kernel" / "gpu003.log").unlink()
    result = CliRunner().invoke(main, ["forget", "--db", str(db), str(src / "kernel" / "gpu003.log")])
    assert result.exit_code == 0 and "gpu003.log.1" in result.output and "copies" in result.output
    run(src, tmp_path)
    assert rows_of(db, src / "kernel" / "gpu003.log.1")["node_events"] == events
