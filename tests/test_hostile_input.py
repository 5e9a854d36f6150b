"""Issue 13 regressions in reading files: over-long lines, bombs, stray quotes,
lines without a delimiter, and the nightly skip of unchanged files."""
import gzip
import os
import time
import tracemalloc
import zlib

import pytest

from analysis import warehouse
from analysis.hosts import HostlistError, expand_hostlist
from analysis.ingest import ingest_directory, prepare_file
from analysis.lines import read_lines
from analysis.model import IngestOptions
from tests.test_sacct_parser import HEADER, row

XID = "2024-03-01T00:00:0{}+00:00 gpu001 kernel: NVRM: Xid (PCI:0000:b3:00): 79, pid=1, GPU has fallen off the bus."


@pytest.fixture
def con(tmp_path):
    c = warehouse.connect(tmp_path / "w.duckdb")
    yield c
    c.close()


def outcome(summary, name):
    return next(o for o in summary.outcomes if o.path.endswith(name))


def rejects(con, like="%"):
    return con.execute("SELECT line_no, reason FROM rejects WHERE file LIKE ? ORDER BY line_no", [like]).fetchall()


def test_two_lines_over_the_limit_are_rejects_not_a_panic(tmp_path, con):
    # polars panicked (PanicException, not an Exception) building these reasons
    (tmp_path / "src" / "kernel").mkdir(parents=True)
    lines = [XID.format(i) for i in range(5)]
    lines[1] = lines[1] + " " + "A" * 300_000
    lines[3] = lines[3] + " " + "B" * 300_000
    (tmp_path / "src" / "kernel" / "gpu001.log").write_text("\n".join(lines) + "\n")
    out = ingest_directory(con, tmp_path / "src")
    assert outcome(out, "gpu001.log").status == "ok"
    got = rejects(con)
    assert [no for no, _ in got] == [2, 4]
    assert all("exceeds the 262,144-byte limit" in reason for _, reason in got)
    assert con.execute("SELECT count(*) FROM node_events").fetchall()[0][0] == 3


def _gzip_with_long_line(path, megabytes):
    comp = zlib.compressobj(9, zlib.DEFLATED, 16 + zlib.MAX_WBITS)
    block = b"A" * (1 << 20)
    with open(path, "wb") as f:
        f.write(comp.compress(b"first\n"))
        for _ in range(megabytes):
            f.write(comp.compress(block))
        f.write(comp.compress(b"\nlast\n"))
        f.write(comp.flush())


def test_gzip_with_a_huge_line_is_read_in_bounded_memory(tmp_path):
    path = tmp_path / "bomb.log.gz"
    _gzip_with_long_line(path, 200)
    assert path.stat().st_size < 400_000
    tracemalloc.start()
    lf = read_lines(path)
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert peak < 80 * 2**20  # a 200 MB line never lands whole
    assert lf.lines["text"].to_list() == ["first", "last"] and lf.n_lines == 3
    assert lf.rejects["reason"][0].startswith("line of 209,715,200 bytes")
    assert len(lf.rejects["raw"][0]) < 5000


def test_decompressed_size_cap_refuses_the_file_with_a_reason(tmp_path, con):
    (tmp_path / "src" / "kernel").mkdir(parents=True)
    _gzip_with_long_line(tmp_path / "src" / "kernel" / "gpu001.log.gz", 8)
    options = IngestOptions(max_file_bytes=4 * 2**20)
    out = ingest_directory(con, tmp_path / "src", options)
    o = outcome(out, "gpu001.log.gz")
    assert o.status == "error" and "max_file_bytes" in o.message and "Traceback" not in o.message


def test_hostlist_bomb_is_refused_quickly():
    start = time.monotonic()
    with pytest.raises(HostlistError, match="more than 100,000 hosts"):
        expand_hostlist("gpu[0-9999][0-9999]")
    with pytest.raises(HostlistError):
        expand_hostlist("a[0-999],b[0-999][0-999]")
    assert time.monotonic() - start < 1
    assert len(expand_hostlist("gpu[0-99][0-99]")) == 10_000


def test_sacct_row_with_a_hostlist_bomb_is_a_reject(tmp_path, con):
    (tmp_path / "src" / "slurm").mkdir(parents=True)
    text = "\n".join([HEADER, row("1"), row("2", nodes="gpu[0-9999][0-9999]"), row("3")])
    (tmp_path / "src" / "slurm" / "s.txt").write_text(text + "\n")
    ingest_directory(con, tmp_path / "src")
    assert con.execute("SELECT list(job_id ORDER BY job_id) FROM sacct_records").fetchall()[0][0] == ["1", "3"]
    [(no, reason)] = rejects(con)
    assert no == 3 and "unreadable NodeList" in reason and "100,000" in reason


def test_sacct_line_without_delimiter_is_not_folded_into_submit_line(tmp_path, con):
    (tmp_path / "src" / "slurm").mkdir(parents=True)
    text = "\n".join([HEADER, row("1"), "hello world", row("2", submit_line='sbatch --wrap="a'), 'b"', row("3")])
    (tmp_path / "src" / "slurm" / "s.txt").write_text(text + "\n")
    ingest_directory(con, tmp_path / "src")
    got = dict(con.execute("SELECT job_id, submit_line FROM sacct_records").fetchall())
    assert got["1"] != "hello world" and "hello" not in got["1"]
    assert got["2"] == 'sbatch --wrap="a\nb"'  # a quoted newline is a counted continuation
    assert [(no, "no '|' delimiter" in r) for no, r in rejects(con)] == [(3, True)]
    assert con.execute("SELECT merged FROM ingested_files").fetchall()[0][0] == 1


def test_sacct_in_another_delimiter_is_linear(tmp_path):
    from analysis.parsers.sacct_repair import MAX_JOINED_LINES
    # 20,001 tab-delimited lines under a '|' header: every line has one field;
    # joining split rows used to try every following line (54 s)
    tabbed = [row(str(i)).replace("|", "\t") for i in range(20_000)]
    (tmp_path / "s.txt").write_text("\n".join([HEADER, *tabbed]) + "\n")
    from tests.conftest import parse_file
    from analysis.parsers.sacct import parse
    start = time.monotonic()
    result, counts = parse_file(parse, tmp_path / "s.txt", "slurm")
    assert counts.rejects == 20_000 and counts.rows == 0
    assert time.monotonic() - start < 30 and MAX_JOINED_LINES <= 64


def test_tab_delimited_dump_with_tab_header_is_read(tmp_path):
    from tests.conftest import parse_file
    from analysis.parsers.sacct import parse
    (tmp_path / "s.txt").write_text("\n".join([HEADER.replace("|", "\t"), row("1").replace("|", "\t")]) + "\n")
    result, counts = parse_file(parse, tmp_path / "s.txt", "slurm")
    assert result.tables["sacct_records"]["job_id"].to_list() == ["1"] and result.format == "sacct\t"


@pytest.mark.parametrize("folder,name,header,line", [
    ("topology", "cabling.csv", "switch,port,host", "leaf01,swp{i},gpu{i:03d}"),
    ("tickets", "tickets.csv", "ticket_id,host,opened,closed,component",
     "T{i},gpu{i:03d},2024-03-01T00:00:00,2024-03-02T00:00:00,gpu"),
])
def test_stray_quote_costs_one_line_not_the_rest_of_the_file(tmp_path, con, folder, name, header, line):
    (tmp_path / "src" / folder).mkdir(parents=True)
    rows = [line.format(i=i) for i in range(47)]
    rows[4] = rows[4].replace(",", ',"', 1)  # one stray quote
    (tmp_path / "src" / folder / name).write_text("\n".join([header, *rows]) + "\n")
    out = ingest_directory(con, tmp_path / "src")
    assert outcome(out, name).status == "ok"
    assert con.execute(f"SELECT count(*) FROM {folder}").fetchall()[0][0] == 46
    [(no, reason)] = rejects(con)
    assert no == 6 and "quot" in reason


def test_unchanged_file_is_not_read_again(tmp_path, con, monkeypatch):
    (tmp_path / "src" / "slurm").mkdir(parents=True)
    path = tmp_path / "src" / "slurm" / "s.txt"
    path.write_text("\n".join([HEADER, row("1")]) + "\n")
    old = time.time() - 3600
    os.utime(path, (old, old))
    ingest_directory(con, tmp_path / "src")
    import analysis.ingest as ingest

    def no_read(*args, **kwargs):
        raise AssertionError("an unchanged file was read")

    monkeypatch.setattr(ingest, "read_raw", no_read)
    assert [o.status for o in ingest_directory(con, tmp_path / "src").outcomes] == ["unchanged"]
    monkeypatch.undo()
    os.utime(path, (old + 60, old + 60))  # touched, same content: read, found unchanged, mtime remembered
    assert [o.status for o in ingest_directory(con, tmp_path / "src").outcomes] == ["unchanged"]
    monkeypatch.setattr(ingest, "read_raw", no_read)
    assert [o.status for o in ingest_directory(con, tmp_path / "src").outcomes] == ["unchanged"]


def test_file_modified_in_the_same_tick_as_its_ingest_is_re_read(tmp_path, con):
    (tmp_path / "src" / "slurm").mkdir(parents=True)
    path = tmp_path / "src" / "slurm" / "s.txt"
    path.write_text("\n".join([HEADER, row("1")]) + "\n")
    ingest_directory(con, tmp_path / "src")
    stat = path.stat()
    path.write_text("\n".join([HEADER, row("2")]) + "\n")  # same size
    os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns))  # and same mtime: a racy rewrite
    ingest_directory(con, tmp_path / "src")
    assert con.execute("SELECT list(job_id) FROM sacct_records").fetchall()[0][0] == ["2"]


def test_batch_is_all_or_nothing(tmp_path, con, monkeypatch):
    (tmp_path / "src" / "slurm").mkdir(parents=True)
    for i in range(3):
        (tmp_path / "src" / "slurm" / f"s{i}.txt").write_text("\n".join([HEADER, row(str(i))]) + "\n")
    from analysis import sql
    real = sql.run

    def crash(con_, name, params=None):
        if name == "upsert_ingested_files":
            raise KeyboardInterrupt  # a crash after the rows were inserted
        return real(con_, name, params)

    monkeypatch.setattr(sql, "run", crash)
    with pytest.raises(KeyboardInterrupt):
        ingest_directory(con, tmp_path / "src")
    monkeypatch.undo()
    assert con.execute("SELECT count(*) FROM sacct_records").fetchall()[0][0] == 0
    assert con.execute("SELECT count(*) FROM ingested_files").fetchall()[0][0] == 0
    ingest_directory(con, tmp_path / "src")
    assert con.execute("SELECT count(*) FROM sacct_records").fetchall()[0][0] == 3


def test_same_content_twice_in_one_batch_is_one_file_and_one_duplicate(tmp_path, con):
    (tmp_path / "src" / "slurm").mkdir(parents=True)
    data = "\n".join([HEADER, row("1")]) + "\n"
    (tmp_path / "src" / "slurm" / "a.txt").write_text(data)
    (tmp_path / "src" / "slurm" / "a.txt.1.gz").write_bytes(gzip.compress(data.encode()))
    out = ingest_directory(con, tmp_path / "src")
    assert sorted(o.status for o in out.outcomes) == ["duplicate", "ok"]
    assert con.execute("SELECT count(*) FROM sacct_records").fetchall()[0][0] == 1


def test_prepare_reports_unreadable_file_in_one_line(tmp_path, con):
    (tmp_path / "src" / "slurm").mkdir(parents=True)
    path = tmp_path / "src" / "slurm" / "s.txt"
    path.write_text("x\n")
    path.chmod(0)
    if os.access(path, os.R_OK):
        pytest.skip("running as root: permissions are not enforced")
    p = prepare_file(con, path, "slurm", tmp_path / "src", IngestOptions())
    assert p.outcome.status == "error" and "\n" not in p.outcome.message
