"""The ingest engine: idempotence, incremental loads, transactions, bad files."""
import gzip
import shutil
from datetime import datetime

import pytest

from analysis import warehouse
from analysis.derive.jobs import build_jobs
from analysis.ingest.engine import ingest_directory
from tests.test_sacct_parser import HEADER, row

TABLES = ("sacct_records", "rejects", "ingested_files", "node_events")


def counts(con):
    return {t: con.execute(f"SELECT count(*) FROM {t}").fetchall()[0][0] for t in TABLES}


@pytest.fixture
def src(tmp_path):
    d = tmp_path / "src"
    (d / "slurm").mkdir(parents=True)
    (d / "slurm" / "day1.txt").write_text("\n".join([HEADER, row("1"), row("2", state="FAILED", exit_code="1:0")]) + "\n")
    return d


@pytest.fixture
def con(tmp_path):
    c = warehouse.connect(tmp_path / "w.duckdb")
    yield c
    c.close()


def test_reingest_adds_nothing_and_new_files_are_incremental(src, con):
    first = ingest_directory(con, src)
    assert [o.status for o in first.outcomes] == ["ok"]
    before = counts(con)
    again = ingest_directory(con, src)
    assert [o.status for o in again.outcomes] == ["unchanged"]
    assert counts(con) == before
    (src / "slurm" / "day2.txt").write_text(HEADER + "\n" + row("3") + "\n")
    third = ingest_directory(con, src)
    assert sorted(o.status for o in third.outcomes) == ["ok", "unchanged"]
    assert counts(con)["sacct_records"] == before["sacct_records"] + 1


def test_changed_file_replaces_its_rows(src, con):
    ingest_directory(con, src)
    (src / "slurm" / "day1.txt").write_text(HEADER + "\n" + row("9") + "\n")
    ingest_directory(con, src)
    assert con.execute("SELECT list(job_id) FROM sacct_records").fetchall()[0][0] == ["9"]


def test_same_content_under_another_name_is_a_duplicate(src, con):
    ingest_directory(con, src)
    data = (src / "slurm" / "day1.txt").read_bytes()
    (src / "slurm" / "day1.txt.1.gz").write_bytes(gzip.compress(data))
    out = ingest_directory(con, src)
    assert sorted(o.status for o in out.outcomes) == ["duplicate", "unchanged"]
    assert con.execute("SELECT count(*) FROM sacct_records").fetchall()[0][0] == 2


def test_crash_mid_file_leaves_old_rows(src, con, monkeypatch):
    ingest_directory(con, src)
    (src / "slurm" / "day1.txt").write_text(HEADER + "\n" + row("9") + "\n")
    from analysis import sql as sqlmod
    real_run = sqlmod.run_on  # rows are inserted through run_on

    def failing_run(c, name, table, frame, raw_table=None):
        if raw_table == "sacct_records":
            raise RuntimeError("disk full")
        return real_run(c, name, table, frame, raw_table)

    monkeypatch.setattr(sqlmod, "run_on", failing_run)
    with pytest.raises(RuntimeError):
        ingest_directory(con, src)
    monkeypatch.setattr(sqlmod, "run_on", real_run)
    assert sorted(con.execute("SELECT list(job_id) FROM sacct_records").fetchall()[0][0]) == ["1", "2"]
    assert con.execute("SELECT count(*) FROM ingested_files").fetchall()[0][0] == 1


def test_bad_files_never_crash_the_run(src, con):
    k = src / "slurm"
    (k / "empty.txt").write_bytes(b"")
    full = gzip.compress((HEADER + "\n" + "\n".join(row(str(i)) for i in range(100, 400)) + "\n").encode())
    (k / "truncated.txt.gz").write_bytes(full[: len(full) // 2])
    (k / "binary.txt").write_bytes(HEADER.encode() + b"\n" + row("5").encode().replace(b"train", b"tr\xff\xfein") + b"\n")
    (k / "long.txt").write_text(HEADER + "\n" + row("6", name="x" * 1_100_000) + "\n" + row("7") + "\n")
    (src / "notes").mkdir()
    (src / "notes" / "readme.txt").write_text("hello\n")
    out = {o.path.rsplit("/", 1)[-1]: o for o in ingest_directory(con, src).outcomes}
    assert out["empty.txt"].status == "ok" and out["empty.txt"].lines == 0
    assert out["truncated.txt.gz"].status == "ok" and 0 < out["truncated.txt.gz"].rows < 300
    assert "truncated gzip" in out["truncated.txt.gz"].message
    cut = con.execute("SELECT count(*) FROM rejects WHERE reason LIKE 'line cut off%'").fetchall()[0][0]
    assert cut == 1  # the half line where the stream broke is not parsed as a row
    assert out["binary.txt"].rows == 1
    assert out["long.txt"].rows == 1 and out["long.txt"].rejects == 1
    assert out["readme.txt"].status == "unrecognised"
    reasons = con.execute("SELECT list(reason) FROM rejects").fetchall()[0][0]
    assert any("exceeds" in r for r in reasons) and any("truncated gzip" in r for r in reasons)
    assert any("not in a known source folder" in r for r in reasons)


def test_jobs_instances_from_duplicates_and_overlapping_dumps(tmp_path, con):
    d = tmp_path / "src" / "slurm"
    d.mkdir(parents=True)
    requeued = [row("50", state="NODE_FAIL", start="2024-03-01T10:00:00", end="2024-03-01T11:00:00"),
                row("50.batch", name="batch", state="CANCELLED", start="2024-03-01T10:00:00", end="2024-03-01T11:00:00"),
                row("50", state="RUNNING", start="2024-03-01T11:30:00", end="Unknown"),
                row("50.batch", name="batch", state="RUNNING", start="2024-03-01T11:30:00", end="Unknown")]
    (d / "a.txt").write_text("\n".join([HEADER, *requeued, row("60", state="PENDING", start="Unknown", end="Unknown")]))
    # next night's dump: instance 1 finished, job 60 ran
    (d / "b.txt").write_text("\n".join([HEADER, row("50", state="COMPLETED", start="2024-03-01T11:30:00", end="2024-03-02T01:00:00"),
                                        row("50.batch", name="batch", start="2024-03-01T11:30:00", end="2024-03-02T01:00:00"),
                                        row("60", start="2024-03-02T00:00:00", end="2024-03-02T02:00:00")]))
    ingest_directory(con, tmp_path / "src")
    build_jobs(con)
    jobs = con.sql("SELECT job_id, instance, state FROM jobs ORDER BY job_id, instance").pl()
    assert jobs.rows() == [("50", 0, "NODE_FAIL"), ("50", 1, "COMPLETED"), ("60", 0, "COMPLETED")]
    steps = con.sql("SELECT job_id, instance, step_id, state FROM job_steps ORDER BY instance").pl()
    assert steps.rows() == [("50", 0, "batch", "CANCELLED"), ("50", 1, "batch", "COMPLETED")]


def test_real_datasets_ingest_with_accounting(datasets, tmp_path, con):
    src = tmp_path / "src" / "slurm"
    src.mkdir(parents=True)
    for f in (datasets / "gcm-slurm-fixtures").glob("sample-sacct-*.txt"):
        shutil.copy(f, src)
    out = ingest_directory(con, tmp_path / "src")
    assert all(o.status in ("ok", "duplicate") for o in out.outcomes)
    from analysis import sql
    assert sql.query(con, "ingest/accounting_check_run", {"source": "slurm", "since": datetime.min}).height == 0
    files = con.sql("SELECT sum(lines) l, sum(row_lines + rejects + skipped + merged) a FROM ingested_files").pl()
    assert files["l"][0] == files["a"][0] > 6000


def _kernel_count(con):
    return con.execute("SELECT count(*) FROM node_events").fetchall()[0][0]


def test_log_rotation_keeps_every_event(tmp_path, con):
    k = tmp_path / "src" / "kernel" / "gpu001"
    k.mkdir(parents=True)
    x = "[Fri Mar  1 00:00:01 2024] NVRM: Xid (PCI:0000:b3:00): 79, pid=1, name=x, GPU has fallen off the bus.\n"
    y = "[Fri Mar  1 01:00:01 2024] NVRM: Xid (PCI:0000:b3:00): 48, pid=1, name=x, DBE\n"
    (k / "kern.log").write_text(x)
    ingest_directory(con, tmp_path / "src")
    # logrotate: the old content moves to archive/kern.log.1, kern.log starts over
    (k / "archive").mkdir()
    (k / "archive" / "kern.log.1").write_text(x)
    (k / "kern.log").write_text(y)
    ingest_directory(con, tmp_path / "src")
    codes = sorted(r[0] for r in con.execute("SELECT code FROM node_events").fetchall())
    assert codes == ["48", "79"]
    ingest_directory(con, tmp_path / "src")
    assert _kernel_count(con) == 2


def test_same_text_on_two_hosts_is_not_a_duplicate(tmp_path, con):
    k = tmp_path / "src" / "kernel"
    k.mkdir(parents=True)
    line = "[Fri Mar  1 00:00:01 2024] NVRM: Xid (PCI:0000:b3:00): 79, pid=1, name=x, GPU has fallen off the bus.\n"
    (k / "gpu001.log").write_text(line)
    (k / "gpu002.log").write_text(line)
    ingest_directory(con, tmp_path / "src")
    assert sorted(r[0] for r in con.execute("SELECT host FROM node_events").fetchall()) == ["gpu001", "gpu002"]


def test_new_boot_time_rereads_raw_dmesg(tmp_path, con):
    from analysis.ingest.options import load_options
    k = tmp_path / "src" / "kernel"
    k.mkdir(parents=True)
    (k / "gpu001.log").write_text("[   10.500000] NVRM: Xid (PCI:0000:b3:00): 79, pid=1, name=x, GPU has fallen off the bus.\n")
    ingest_directory(con, tmp_path / "src")
    assert _kernel_count(con) == 0
    assert "no boot time" in con.execute("SELECT reason FROM rejects").fetchall()[0][0]
    opts = load_options(tmp_path / "src", boot_times={"gpu001": "2024-03-01T00:00:00Z"})
    out = ingest_directory(con, tmp_path / "src", opts)
    assert [o.status for o in out.outcomes] == ["ok"]
    from datetime import datetime
    assert con.execute("SELECT event_time FROM node_events").fetchall() == [(datetime(2024, 3, 1, 0, 0, 10, 500000),)]
    assert con.execute("SELECT count(*) FROM rejects").fetchall()[0][0] == 0


def test_stale_pending_array_range_is_dropped(tmp_path, con):
    import time
    d = tmp_path / "src" / "slurm"
    d.mkdir(parents=True)
    (d / "day1.txt").write_text("\n".join([HEADER, row("100_[5-6]", raw="100", state="PENDING", start="Unknown",
                                                    end="Unknown", nodes="None assigned")]))
    ingest_directory(con, tmp_path / "src")
    time.sleep(0.01)
    (d / "day2.txt").write_text("\n".join([HEADER, row("100_5", raw="105"), row("100_6", raw="106"),
                                           row("100_[7-8]", raw="100", state="PENDING", start="Unknown", end="Unknown")]))
    ingest_directory(con, tmp_path / "src")
    build_jobs(con)
    assert sorted(r[0] for r in con.execute("SELECT job_id FROM jobs").fetchall()) == ["100_5", "100_6", "100_[7-8]"]
