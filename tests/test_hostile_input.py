"""Issue 13 regressions in reading files: over-long lines, bombs, stray quotes,
lines without a delimiter, and the nightly skip of unchanged files; issue 21's:
unterminated over-long last lines, lone-CR line ends, numbers wider than 64 bits,
stray quotes merging CSV rows, gzip bombs held in memory, links out of the source
tree, control characters in file names, and damaged or misplaced warehouses."""
import gzip
import os
import time
import tracemalloc
import zlib
from pathlib import Path

import pytest

from analysis import warehouse
from analysis.ingest.contract import IngestOptions
from analysis.ingest.engine import ingest_directory
from analysis.ingest.one_file import prepare_file
from analysis.ingest.hosts import HostlistError, expand_hostlist
from analysis.ingest.lines import read_lines
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
    from analysis.ingest.parsers.sacct_repair import MAX_JOINED_LINES
    # 20,001 tab-delimited lines under a '|' header: every line has one field;
    # joining split rows used to try every following line (54 s)
    tabbed = [row(str(i)).replace("|", "\t") for i in range(20_000)]
    (tmp_path / "s.txt").write_text("\n".join([HEADER, *tabbed]) + "\n")
    from tests.conftest import parse_file
    from analysis.ingest.parsers.sacct import parse
    start = time.monotonic()
    result, counts = parse_file(parse, tmp_path / "s.txt", "slurm")
    assert counts.rejects == 20_000 and counts.rows == 0
    assert time.monotonic() - start < 30 and MAX_JOINED_LINES <= 64


def test_tab_delimited_dump_with_tab_header_is_read(tmp_path):
    from tests.conftest import parse_file
    from analysis.ingest.parsers.sacct import parse
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
    import analysis.ingest.one_file as ingest

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
        if name == "ingest/upsert_ingested_files":
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


# -- issue 21: no line lost to hostile input ----------------------------------------------------------

def test_over_long_last_line_without_newline_is_a_reject(tmp_path, con):
    # a file of only that line was "ok" with 0 lines; after good lines it failed the file's accounting
    (tmp_path / "src" / "kernel").mkdir(parents=True)
    good = "\n".join(XID.format(i) for i in range(3)) + "\n"
    (tmp_path / "src" / "kernel" / "gpu001.log").write_bytes(good.encode() + b"B" * 300_000)
    (tmp_path / "src" / "kernel" / "gpu002.log").write_bytes(b"A" * 300_000)
    out = ingest_directory(con, tmp_path / "src")
    assert [(o.status, o.lines, o.rows, o.rejects) for o in out.outcomes] == [("ok", 4, 3, 1), ("ok", 1, 0, 1)]
    got = con.execute("SELECT file, line_no, left(raw, 3), reason FROM rejects ORDER BY file").fetchall()
    assert [(Path(f).name, no, raw) for f, no, raw, _ in got] == [("gpu001.log", 4, "BBB"), ("gpu002.log", 1, "AAA")]
    assert all("line of 300,000 bytes exceeds" in reason for *_, reason in got)


def test_lone_cr_line_ends_are_line_ends(tmp_path, con):
    (tmp_path / "src" / "kernel").mkdir(parents=True)
    (tmp_path / "src" / "kernel" / "gpu001.log").write_bytes("\r".join(XID.format(i) for i in range(3)).encode() + b"\r")
    [o] = ingest_directory(con, tmp_path / "src").outcomes
    assert (o.status, o.lines, o.rows, o.rejects) == ("ok", 3, 3, 0) and "lone CRs" in o.message


def test_lone_crs_inside_lf_lines_make_a_clear_reject(tmp_path):
    path = tmp_path / "slurm-7.out"  # a progress bar redrawn with CR for longer than the line cap
    path.write_bytes(b"start\n" + b"step 1/9 |####|\r" * 20_000 + b"\nend\n")
    lf = read_lines(path)
    assert lf.lines["text"].to_list() == ["start", "end"] and lf.n_lines == 3
    assert "carriage returns (CR) without line feeds" in lf.rejects["reason"][0]


def test_joblog_number_wider_than_64_bits_is_a_reject_not_a_traceback(tmp_path, con):
    from click.testing import CliRunner

    from pipelines.cli import main

    (tmp_path / "src" / "joblogs").mkdir(parents=True)
    init = "node01:1:1 [0] NCCL INFO comm 0x1 rank {} nranks 2 cudaDev 0 busId 1000 - Init COMPLETE"
    (tmp_path / "src" / "joblogs" / "slurm-12.out").write_text(
        "\n".join([init.format(1), init.format("99999999999999999999")] + ["chatter"] * 98) + "\n")
    [o] = ingest_directory(con, tmp_path / "src").outcomes
    assert (o.status, o.lines, o.rows, o.rejects) == ("ok", 100, 1, 1)
    [(no, reason)] = rejects(con)
    assert no == 2 and reason == "number too large for a 64-bit integer: rank 99999999999999999999"
    result = CliRunner().invoke(main, ["check", "--source", str(tmp_path / "src")])
    assert "Traceback" not in result.output and "64-bit integer" in result.output, result.output


def test_stray_quotes_do_not_merge_the_rows_of_a_cabling_map(tmp_path, con):
    # the quoted "port" swallowed gpu002-gpu004 into one field: a cabling map lost three hosts
    (tmp_path / "src" / "topology").mkdir(parents=True)
    rows = [f"leaf01,swp{i},gpu{i:03d}" for i in range(1, 7)]
    rows[1], rows[3] = 'leaf01,"swp2,gpu002', 'leaf01,swp4",gpu004'
    (tmp_path / "src" / "topology" / "cabling.csv").write_text("\n".join(["switch,port,host", *rows]) + "\n")
    ingest_directory(con, tmp_path / "src")
    hosts = con.execute("SELECT list(host ORDER BY host) FROM topology").fetchall()[0][0]
    assert hosts == ["gpu001", "gpu003", "gpu005", "gpu006"]
    got = con.execute("SELECT line_no, raw, reason FROM rejects ORDER BY line_no").fetchall()
    assert [(no, raw) for no, raw, _ in got] == [(3, rows[1]), (5, rows[3])] and all("quot" in r for *_, r in got)


def test_stray_quotes_in_tickets_do_not_swallow_rows_but_a_note_may_span_lines(tmp_path, con):
    (tmp_path / "src" / "tickets").mkdir(parents=True)
    t = "T{0},gpu00{0},2024-03-01T00:00:00,2024-03-02T00:00:00,gpu,{1}"
    lines = ["ticket_id,host,opened,closed,component,resolution", t.format(1, '"reseated'), t.format(2, "replaced"),
             t.format(3, 'done"'), t.format(4, '"Replaced GPU 3.'), 'Ran dcgmi diag -r 3, passed."',
             'T5,"gpu005,2024-03-01T00:00:00,,gpu,x', 'T6,gpu006",2024-03-01T00:00:00,,gpu,y']
    (tmp_path / "src" / "tickets" / "tickets.csv").write_text("\n".join(lines) + "\n")
    [o] = ingest_directory(con, tmp_path / "src").outcomes
    got = con.execute("SELECT ticket_id, resolution FROM tickets ORDER BY ticket_id").fetchall()
    assert got == [("T2", "replaced"), ("T4", "Replaced GPU 3.\nRan dcgmi diag -r 3, passed.")]
    reasons = dict(rejects(con))
    assert sorted(reasons) == [2, 4, 7, 8] and "rows of their own" in reasons[2] and "quoted host" in reasons[7]
    assert (o.lines, o.rows, o.rejects) == (8, 4, 4)  # rows: 2 tickets and their 2 node events
    assert con.execute("SELECT reporter, message FROM node_events WHERE source = 'ticket' ORDER BY reporter").fetchall() == [
        ("T2", "gpu: replaced"), ("T4", "gpu: Replaced GPU 3.\nRan dcgmi diag -r 3, passed.")]


def test_gzip_bomb_is_refused_while_streaming_in_bounded_memory(tmp_path, con):
    from analysis.ingest.lines import FileTooLarge, read_raw

    member = gzip.compress((b"x" * 99 + b"\n") * (1 << 16), compresslevel=9)  # 6.5 MB of short lines
    path = tmp_path / "src" / "kernel" / "gpu001.log.gz"
    path.parent.mkdir(parents=True)
    path.write_bytes(member * 20)  # 131 MB once decompressed, from 450 KB
    cap = 64 * 2**20
    tracemalloc.start()
    try:
        with pytest.raises(FileTooLarge, match="max_file_bytes"):
            read_raw(path, max_file_bytes=cap)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < cap / 8  # held up to the cap (and twice that while joining) before
    o = outcome(ingest_directory(con, tmp_path / "src", IngestOptions(max_file_bytes=cap)), "gpu001.log.gz")
    assert o.status == "error" and "max_file_bytes" in o.message


def test_concatenated_gzip_members_are_read_once(tmp_path):
    from analysis.ingest.lines import _decompressed

    # a member ending where output was cut at the chunk size was followed by its tail twice (memory blew up)
    path = tmp_path / "rotated.log.gz"
    path.write_bytes(b"".join(gzip.compress(f"member {i}\n".encode() * 30_000) for i in range(5)))
    data = b"".join(_decompressed(path, [], chunk=1 << 16))
    assert data == b"".join(f"member {i}\n".encode() * 30_000 for i in range(5))


def test_symbolic_link_out_of_the_source_tree_is_not_followed(tmp_path, con):
    (tmp_path / "src" / "kernel").mkdir(parents=True)
    (tmp_path / "secret").write_text("root:x:0:0:root:/root:/bin/bash\n")
    (tmp_path / "src" / "kernel" / "x.log").symlink_to(tmp_path / "secret")
    (tmp_path / "src" / "kernel" / "loop.log").symlink_to("loop.log")
    (tmp_path / "src" / "kernel" / "gpu001.log").write_text(XID.format(1) + "\n")
    (tmp_path / "src" / "kernel" / "current.log").symlink_to("gpu001.log")  # inside the tree: read once, as its target
    out = {Path(o.path).name: o for o in ingest_directory(con, tmp_path / "src").outcomes}
    assert sorted(out) == ["current.log", "gpu001.log", "loop.log", "x.log"]
    assert out["current.log"].status == "duplicate" and "symbolic link" in out["current.log"].message  # recorded, not read
    assert out["x.log"].status == "unrecognised" and "outside the source directory" in out["x.log"].message
    assert out["loop.log"].status == "unrecognised" and "loop" in out["loop.log"].message
    assert con.execute("SELECT count(*) FROM rejects WHERE raw LIKE '%root%'").fetchall()[0][0] == 0
    assert con.execute("SELECT count(*) FROM node_events").fetchall()[0][0] == 1


def test_control_characters_in_file_names_are_escaped_in_check_output(tmp_path):
    from click.testing import CliRunner

    from pipelines.cli import main

    kernel = tmp_path / "src" / "kernel"
    kernel.mkdir(parents=True)
    (kernel / "gpu001.log").write_text(XID.format(1) + "\n")
    (kernel / "gpu002.log\nWARNING: all hosts healthy\x1b[2J.log").write_text("not a kernel log\n")
    (tmp_path / "src" / os.fsdecode(b"stray\xff\n.log")).write_text("x\n")  # not UTF-8: used to crash the ingest
    result = CliRunner().invoke(main, ["check", "--source", str(tmp_path / "src")])
    assert "Traceback" not in result.output, result.output
    assert not any(line.startswith("WARNING: all hosts") for line in result.output.splitlines())
    assert "gpu002.log\\nWARNING: all hosts healthy\\x1b[2J.log" in result.output and "stray\\xff\\n.log" in result.output
    assert "\x1b" not in result.output


def test_damaged_warehouse_says_so_and_what_to_do(tmp_path):
    from click.testing import CliRunner

    from pipelines.cli import main

    db = tmp_path / "w.duckdb"
    warehouse.connect(db).close()
    db.write_bytes(db.read_bytes()[: db.stat().st_size // 2])  # a copy cut short
    for args in (["sql", "--db", str(db), "SELECT 1"], ["forget", "--db", str(db), "x"]):
        result = CliRunner().invoke(main, args)
        assert result.exit_code != 0 and "Traceback" not in result.output
        assert "is damaged" in result.output and "goodput run" in result.output and "backup" in result.output
        assert "Could not read enough bytes" in result.output and len(result.output.strip().splitlines()) == 1


def test_db_under_a_file_says_the_parent_is_a_file(tmp_path):
    from click.testing import CliRunner

    from pipelines.cli import main
    from pipelines.cli import DEMO_SOURCE

    (tmp_path / "notes.txt").write_text("x")
    db = tmp_path / "notes.txt" / "w.duckdb"
    run = CliRunner().invoke(main, ["run", "--source", str(DEMO_SOURCE), "--db", str(db), "--out", str(tmp_path / "o")])
    query = CliRunner().invoke(main, ["sql", "--db", str(db), "SELECT 1"])
    for result in (run, query):
        assert result.exit_code != 0 and "notes.txt is a file, not a folder" in result.output, result.output


def test_stray_quote_in_the_lemon_labels_names_its_line(tmp_path):
    from analysis.nodes.lemons import LabelsError, read_labels

    path = tmp_path / "lemons.csv"
    path.write_text('host,is_lemon\ngpu001,"true\ngpu002,false\ngpu003,true"\n')  # merged 3 labels into one before
    with pytest.raises(LabelsError, match="lemons.csv: line 2: broken CSV quoting"):
        read_labels(path)
    path.write_text("host,is_lemon\ngpu001,true\n\ngpu002,false\n")
    assert read_labels(path)["host"].to_list() == ["gpu001", "gpu002"]
