"""Readers are never locked out (issue 22): while another process writes the warehouse, `goodput sql` and
`goodput why` answer from the snapshot the last writer published, and say so; publishing is skipped when
nothing was written, and a reader of the old snapshot keeps a whole file when a new one replaces it."""
import filecmp
import os
import shutil
import subprocess
import sys
import textwrap

import duckdb
import pytest
from click.testing import CliRunner
from dagster import asset, materialize

from analysis import snapshot, warehouse
from pipelines.cli import DEMO_SOURCE, main
from assets.resources import Warehouse
from tests.conftest import REPO


@pytest.fixture(scope="module")
def built(demo_warehouse):
    return demo_warehouse


@pytest.fixture
def db(built, tmp_path):
    """A copy of the built warehouse and its snapshot, for tests that write."""
    for path in (built, snapshot.snapshot_path(built)):
        shutil.copy2(path, tmp_path / path.name)
    return tmp_path / built.name


def goodput(*args):
    return subprocess.run([sys.executable, "-m", "pipelines", *args], cwd=REPO, capture_output=True, text=True,
                          env={**os.environ, "GOODPUT_TORCH_THREADS": "1"}, timeout=120)


@pytest.fixture
def writer(db):
    """Another process that holds the warehouse for writing, as a run does, and has deleted every job."""
    holder = subprocess.Popen([sys.executable, "-c", textwrap.dedent("""
        import sys, time, duckdb
        con = duckdb.connect(sys.argv[1])
        con.execute("DELETE FROM jobs")
        print("ready", flush=True)
        time.sleep(120)
        """), str(db)], stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "ready"
        yield holder
    finally:
        holder.kill()
        holder.wait()


def count(path, table="jobs"):
    con = duckdb.connect(str(path), read_only=True)
    try:
        return con.execute(f"SELECT count(*) FROM {table}").fetchall()[0][0]
    finally:
        con.close()


def test_a_run_publishes_a_whole_snapshot(built):
    snap = snapshot.snapshot_path(built)
    assert snap.name == "w.snapshot.duckdb"
    con = duckdb.connect(str(snap), read_only=True)
    tables = {r[0] for r in con.execute("SELECT table_name FROM duckdb_tables()").fetchall()}
    con.close()
    assert {"jobs", "failure_attribution", "job_run_ettr", "ingested_files", "rejects"} <= tables
    assert count(snap) == count(built) == 10
    assert snap.stat().st_size == built.stat().st_size and snap.stat().st_mtime_ns == built.stat().st_mtime_ns


def test_sql_and_why_answer_from_the_snapshot_while_another_process_writes(db, writer):
    query = goodput("sql", "--db", str(db), "--csv", "SELECT count(*) AS n FROM jobs")
    assert query.returncode == 0, query.stderr
    assert query.stdout.splitlines() == ["n", "10"]  # the published state, not the writer's half-done one
    notice = query.stderr.strip().splitlines()
    assert len(notice) == 1 and "answering from the state published at" in notice[0]
    assert str(snapshot.snapshot_path(db)) in notice[0] and f"(PID {writer.pid})" in notice[0]
    why = goodput("why", "--db", str(db), "1001")
    assert why.returncode == 0, why.stderr
    assert why.stdout.startswith("job 1001:") and "primary cause: gpu_unavailable" in why.stdout
    assert "answering from the state published at" in why.stderr


def test_the_snapshot_keeps_the_sql_fences(db, writer, tmp_path):
    other = tmp_path / "secret.csv"
    other.write_text("a\n1\n")
    result = CliRunner().invoke(main, ["sql", "--db", str(db), f"SELECT * FROM read_csv('{other}')"])
    assert result.exit_code != 0 and "reads the warehouse only" in result.output


def test_without_a_snapshot_the_lock_error_stays(db, writer):
    snapshot.snapshot_path(db).unlink()
    query = goodput("sql", "--db", str(db), "SELECT 1")
    assert query.returncode != 0 and "in use by another process" in query.stderr
    assert f"PID {writer.pid}" in query.stderr


def test_publishing_is_skipped_when_nothing_was_written(db):
    snap = snapshot.snapshot_path(db)
    before = snap.stat().st_mtime_ns, snap.stat().st_ino
    assert not warehouse.published(db).done
    warehouse.connect(db).close()  # a writer that changed nothing (the schema is not rerun)
    skipped = snapshot.publish(db)
    assert not skipped.done and skipped.why == "nothing written since the last snapshot"
    assert (snap.stat().st_mtime_ns, snap.stat().st_ino) == before


def test_a_new_snapshot_replaces_the_old_one_under_its_readers(db):
    snap = snapshot.snapshot_path(db)
    old_reader = duckdb.connect(str(snap), read_only=True)
    con = warehouse.connect(db)
    con.execute("DELETE FROM jobs WHERE job_id = '1001'")
    con.close()
    done = warehouse.published(db)
    assert done.done and done.size == db.stat().st_size and done.method in ("changed chunks", "reflink", "copy_file_range", "copy")
    assert old_reader.execute("SELECT count(*) FROM jobs").fetchall() == [(10,)]  # its file is whole
    old_reader.close()
    assert count(snap) == count(db) < 10  # the new readers see the new state
    assert not list(db.parent.glob(".*.tmp"))


def _delete_job(db, job_id: str) -> None:
    con = warehouse.connect(db)
    con.execute("DELETE FROM jobs WHERE job_id = ?", [job_id])
    con.close()


def test_a_publish_writes_into_the_spare_only_what_changed(db):
    snap = snapshot.snapshot_path(db)
    _delete_job(db, "1001")
    assert warehouse.published(db).done and snapshot.spare_path(snap).is_file()  # the replaced snapshot is kept
    _delete_job(db, "1002")
    done = warehouse.published(db)
    assert done.method == "changed chunks" and filecmp.cmp(db, snap, shallow=False)
    assert count(snap) == count(db) < 9 and snapshot.spare_path(snap).is_file()
    assert not list(db.parent.glob(".*.tmp"))


def test_a_spare_a_reader_still_has_open_is_never_written(db):
    snap = snapshot.snapshot_path(db)
    old_reader = duckdb.connect(str(snap), read_only=True)  # in this process: the lock must see it too
    _delete_job(db, "1001")
    assert warehouse.published(db).done  # the reader's snapshot is now the spare
    _delete_job(db, "1002")
    done = warehouse.published(db)
    assert done.done and done.method != "changed chunks" and filecmp.cmp(db, snap, shallow=False)
    assert old_reader.execute("SELECT count(*) FROM jobs").fetchall() == [(10,)]  # its file was not touched
    old_reader.close()
    assert count(snap) == count(db) < 9


def test_writer_commands_publish(db):
    snap = snapshot.snapshot_path(db)
    files = count(snap, "ingested_files")
    unknown = CliRunner().invoke(main, ["forget", "--db", str(db), str(DEMO_SOURCE / "no-such.log")])
    assert unknown.exit_code != 0 and count(snap, "ingested_files") == files
    result = CliRunner().invoke(main, ["forget", "--db", str(db), str(DEMO_SOURCE / "kernel" / "gpu003.log")])
    assert result.exit_code == 0, result.output
    assert count(snap, "ingested_files") == count(db, "ingested_files") == files - 1


def test_a_run_holds_the_warehouse_from_its_first_step_to_its_last(tmp_path):
    """Between two steps no other process can open the file (it would stall the next step); the snapshot
    is published once, at the end."""
    db = tmp_path / "w.duckdb"
    probe = "import sys, duckdb; duckdb.connect(sys.argv[1], read_only=True)"

    @asset
    def first(warehouse: Warehouse) -> None:
        with warehouse.connect() as con:
            con.execute("CREATE TABLE steps AS SELECT 1 AS n")

    @asset(deps=[first])
    def second(warehouse: Warehouse) -> None:
        other = subprocess.run([sys.executable, "-c", probe, str(db)], capture_output=True, text=True)
        assert other.returncode != 0 and "lock" in other.stderr  # still held between the steps
        assert not snapshot.snapshot_path(db).exists()
        with warehouse.connect() as con:
            con.execute("INSERT INTO steps VALUES (2)")

    result = materialize([first, second], resources={"warehouse": Warehouse(db_path=str(db))})
    assert result.success
    assert count(snapshot.snapshot_path(db), "steps") == 2
    assert subprocess.run([sys.executable, "-c", probe, str(db)]).returncode == 0  # released
