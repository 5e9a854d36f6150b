"""Strict where input lies (issue 35, part 2): what a hostile audit of fuzzed samples found stored, skipped
without a reason or not recorded at all is now a reject with its reason, or a file record.

Each case seeds a real-shaped file (the demo source's, or tests/fixtures') with the damage at a seeded
random place, parses it as the engine would and asserts the reject (every line still accounted for), or
ingests a source tree and asserts the file record.
"""
from __future__ import annotations

import os
import random
import threading
from datetime import datetime
from pathlib import Path

import pytest

from analysis import warehouse
from analysis.ingest.accounting import account
from analysis.ingest.contract import IngestOptions, ParseContext, UnrecognisedFormat
from analysis.ingest.engine import ingest_directory
from analysis.ingest.one_file import parser_for
from analysis.ingest.hosts import host_from_path
from analysis.ingest.lines import CONTROL_NOTE, CONTROL_REASON, LineStream, read_lines
from analysis.ingest.parsers import health, kernel, network, promjson, sacct, switch, telemetry
from tests.conftest import FIXTURES, parse_file
from tests.test_fuzz import CASES, DEMO, _write_case

PERFQUERY = (FIXTURES / "network" / "gpu0007" / "perfquery.txt").read_bytes()
IBQUERYERRORS = (FIXTURES / "network" / "ibqueryerrors-2024-03-05.txt").read_bytes()


def _insert(data: bytes, line: bytes, seed: str, after: int = 2) -> tuple[bytes, int]:
    """``data`` with ``line`` inserted at a seeded random line (not before line ``after`` + 1); and its number."""
    lines = data.splitlines()
    at = random.Random(seed).randrange(after, len(lines) + 1)
    return b"\n".join(lines[:at] + [line] + lines[at:]) + b"\n", at + 1


def _rejects(result) -> dict[int, str]:
    return dict(zip(result.rejects["line_no"].to_list(), result.rejects["reason"].to_list()))


# 1. perfquery and ibqueryerrors lines that are cut off or garbled were counted as skipped, with no reject

@pytest.mark.parametrize("line,reason", [
    (b"SymbolErrorCounter:", "SymbolErrorCounter without a value"),
    (b"SymbolErrorCounter:..............", "SymbolErrorCounter without a value"),
    (b"Symbol\x00ErrorCounter:..............3", "not a perfquery line"),
    (b"SymbolErrorCoun", "not a perfquery line"),
    (b"SymbolErr:..............3", "counter name 'SymbolErr' cut off (a prefix of SymbolErrorCounter)"),
    (b"PortXmitDiscards:\x00................0", "PortXmitDiscards value '\x00................0' is not an unsigned integer"),
    (b'PortXmit"Discards:................0', "not a perfquery line"),
    (b"PortXmitDiscards:.....\xff\xfe\xc3...........0", "is not an unsigned integer"),
    (b"\x1b[31mPortXmitDiscards:................0", "not a perfquery line"),
    (b"PortXmitDiscards:\x1b[0m................0", "is not an unsigned integer"),
    (b"PortXmitDiscards:................3x", "PortXmitDiscards value '3x' is not an unsigned integer"),
    (b"PortXmitDiscards:3", "PortXmitDiscards line garbled"),
])
@pytest.mark.parametrize("seed", [1, 2, 3])
def test_a_garbled_perfquery_line_is_a_reject(tmp_path, line, reason, seed):
    data, at = _insert(PERFQUERY, line, f"{line!r}-{seed}")
    path = tmp_path / "perfquery.txt"
    path.write_bytes(data)
    result, counts = parse_file(network.parse, path, "network", host_hint="gpu0007")
    assert reason in _rejects(result).get(at, ""), _rejects(result)
    assert counts.rejects == 1 and counts.rows == 9  # the fixture's readings all stand


@pytest.mark.parametrize("line,reason", [
    (b"   GUID 0x248a0703005d8b41 port 7: [LinkDow", "ibqueryerrors port line cut off or garbled"),
    (b"   GUID 0x248a0703005d8b41 port 7: [LinkDownedCounter == abc]", "ibqueryerrors port line cut off or garbled"),
    (b"   GUID 0x248a0703005d8b41 port 1: [SymbolErrorCounter == 3] [PortRcvEr", "cut off or garbled"),
    (b"   GUID 0x248a07", "ibqueryerrors port line cut off or garbled"),
    (b"   GUID 0x248a0703005d8b41 port 2: [SymbolErrorCounter == 99999999999999999999999]", "beyond 2^64"),
])
def test_a_cut_off_ibqueryerrors_line_is_a_reject(tmp_path, line, reason):
    data, at = _insert(IBQUERYERRORS, line, repr(line), after=1)
    data, at = data.replace(b"\n" + line + b"\n", b"\n") + line + b"\n", data.count(b"\n")  # at the end: a cut-off file
    path = tmp_path / "ibqueryerrors-2024-03-05.txt"
    path.write_bytes(data)
    result, counts = parse_file(network.parse, path, "network", host_hint=None)
    assert reason in _rejects(result).get(at, ""), _rejects(result)
    assert counts.rejects == 1 and counts.rows == 3


def test_readings_under_a_garbled_errors_for_line_are_not_given_the_node_above(tmp_path):
    path = tmp_path / "ibqueryerrors-2024-03-05.txt"
    path.write_bytes(IBQUERYERRORS.replace(b'Errors for "gpu0009 HCA-1"', b'Errors for "gpu00'))
    result, counts = parse_file(network.parse, path, "network", host_hint=None)
    assert set(result.tables["telemetry"]["host"]) == {"leaf-p1-r01"}  # not the switch's, as the node above
    assert _rejects(result) == {4: "'Errors for' line cut off or garbled: no quoted node description (the readings "
                                   "below it are refused)",
                                5: "readings without an 'Errors for \"<node description>\"' line above them"}


# 2. values out of range were stored: a health time in the year 5138, counters of -3 and 1e23

@pytest.mark.parametrize("value,reason", [
    (b"-3", "PortXmitDiscards value -3 is negative: port counters are unsigned"),
    (b"99999999999999999999999", "PortXmitDiscards value 99999999999999999999999 is beyond 2^64"),
    (b"18446744073709551616", "beyond 2^64"),
])
def test_a_counter_out_of_the_unsigned_64_bit_range_is_a_reject(tmp_path, value, reason):
    data, at = _insert(PERFQUERY, b"PortXmitDiscards:................" + value, repr(value))
    path = tmp_path / "perfquery.txt"
    path.write_bytes(data)
    result, _ = parse_file(network.parse, path, "network", host_hint="gpu0007")
    assert reason in _rejects(result)[at]
    ok = PERFQUERY.replace(b"PortXmitData:....................2724", b"PortXmitData:....................18446744073709551615")
    path.write_bytes(ok)  # the largest 64-bit count is a reading (of 4-byte words)
    result, _ = parse_file(network.parse, path, "network", host_hint="gpu0007")
    assert not result.rejects.height and result.tables["telemetry"]["value"].max() == 4.0 * 18446744073709551615


def test_a_perfquery_reading_under_a_date_out_of_range_is_a_reject(tmp_path):
    path = tmp_path / "perfquery.txt"
    path.write_bytes(PERFQUERY.replace(b"Tue Mar  5 06:00:01 UTC 2024", b"Tue Mar  5 06:00:01 UTC 9999"))
    result, counts = parse_file(network.parse, path, "network", host_hint="gpu0007")
    reasons = _rejects(result)
    assert reasons[11].startswith("time 9999-03-05 06:00:01") and "outside the years 1970-2100" in reasons[11]
    assert all("outside the years 1970-2100" in reasons[n] for n in (14, 15, 16)) and counts.rows == 6  # the first six


@pytest.mark.parametrize("stamp", ["99999999999999999999", '"2101-01-01T00:00:00Z"', '"1969-12-31T23:59:59Z"', "-99999999999"])
def test_a_health_time_out_of_range_is_a_reject(tmp_path, stamp):
    demo = (DEMO / "health" / "health-2024-03-01.jsonl").read_bytes()
    line = b'{"time": %s, "host": "gpu001", "check": "check_gpu", "severity": "critical", "message": "x"}' % stamp.encode()
    data, at = _insert(demo, line, stamp, after=0)
    path = tmp_path / "health-2024-03-01.jsonl"
    path.write_bytes(data)
    result, counts = parse_file(health.parse, path, "health")
    assert _rejects(result)[at] == f"time '{stamp.strip(chr(34))}' is outside the years 1970-2100"
    assert counts.rejects == 1 and result.tables["node_events"]["event_time"].dt.year().max() <= 2100


def test_an_nhc_epoch_out_of_range_is_a_reject(tmp_path):
    path = tmp_path / "gpu001.log"
    path.write_text("[1709251200] - Health check failed:  check_hw_eth:  No eth0\n"
                    "[99999999999] - Health check failed:  check_hw_eth:  No eth0\n")
    result, counts = parse_file(health.parse, path, "health")
    assert _rejects(result) == {2: "time '99999999999' is outside the years 1970-2100"} and counts.rows == 1


@pytest.mark.parametrize("stamp", ["99999999999999999999", "2999-01-01T00:00:00Z"])
def test_a_telemetry_time_out_of_range_is_a_reject(tmp_path, stamp):
    demo = (DEMO / "telemetry" / "dcgm-2024-03-01.csv").read_bytes()
    body = demo.splitlines()[1].split(b",", 1)[1]
    data, at = _insert(demo, stamp.encode() + b"," + body, stamp, after=1)
    path = tmp_path / "dcgm-2024-03-01.csv"
    path.write_bytes(data)
    result, counts = parse_file(telemetry.parse, path, "telemetry")
    assert _rejects(result)[at] == f"time '{stamp}' is outside the years 1970-2100" and counts.rejects == 1


def test_a_parquet_time_out_of_range_is_a_reject(tmp_path):
    import polars as pl

    path = tmp_path / "gpu001.parquet"
    pl.DataFrame({"time": [1_709_251_200, 9_000_000_000_000_000_000], "metric": ["m", "m"], "value": [1.0, 2.0]}).write_parquet(path)
    result = telemetry.parse_parquet(path, ParseContext(path=path, source="telemetry", host_hint="gpu001"))
    assert _rejects(result) == {2: "time '9000000000000000000' is outside the years 1970-2100"}  # 2255
    assert result.tables["telemetry"].height == 1



@pytest.mark.parametrize("name,line,reason", [
    ("gpu003.log", b"9999-03-01T06:41:56+0000 gpu003 kernel: NVRM: GPU 0000:b3:00.0: GPU has fallen off the bus.",
     "time 9999-03-01 06:41:56 is outside the years 1970-2100"),
    ("gpu001.dmesg", b"[Fri Mar  1 02:10:44 1900] NVRM: Xid (PCI:0000:29:00): 79, GPU has fallen off the bus.",
     "time 1900-03-01 02:10:44 is outside the years 1970-2100"),
])
def test_a_kernel_stamp_out_of_range_is_a_reject(tmp_path, name, line, reason):
    data, at = _insert((DEMO / "kernel" / name).read_bytes(), line, name, after=0)
    path = tmp_path / name
    path.write_bytes(data)
    result, counts = parse_file(kernel.parse, path, "kernel")
    assert _rejects(result) == {at: reason} and counts.rejects == 1
    assert result.tables["node_events"]["event_time"].dt.year().is_between(1970, 2100).all()


def test_a_switch_stamp_out_of_range_is_a_reject(tmp_path):
    line = b"2101-03-01T03:29:50.153894+00:00 leaf01 switchd[19517]: nic.c:223 nic_set_carrier: swp5: setting kernel carrier: down"
    data, at = _insert((DEMO / "switch" / "leaf01.log").read_bytes(), line, "switch", after=0)
    path = tmp_path / "leaf01.log"
    path.write_bytes(data)
    result, counts = parse_file(switch.parse, path, "switch")
    assert _rejects(result) == {at: "time 2101-03-01 03:29:50 is outside the years 1970-2100"} and counts.rejects == 1
    assert counts.rows == len(data.splitlines()) - 1


def test_a_prometheus_sample_time_out_of_range_is_a_reject(tmp_path):
    path = tmp_path / "prom.json"
    path.write_text('{"status":"success","data":{"resultType":"matrix","result":[{"metric":{"__name__":"DCGM_FI_DEV_GPU_TEMP",'
                    '"Hostname":"gpu001","gpu":"0"},"values":[[1709251200,"41"],[99999999999,"42"],[-99999999999,"43"]]}]}}')
    result = promjson.parse_json([path.read_bytes()], ParseContext(path=path, source="telemetry", host_hint=None))
    assert _rejects(result) == {2: "time '99999999999' is outside the years 1970-2100",  # the year 5138
                                3: "time '-99999999999' is outside the years 1970-2100"}
    assert result.tables["telemetry"]["time"].to_list() == [datetime(2024, 3, 1)]


def _sacct_row(job: str, submit: str, start: str, end: str) -> bytes:
    return (f"{job}|{job}|x|alice|llm|gpu|high|9|FAILED|1:0|None|{submit}|{submit}|{start}|{end}|06:27:10|4|"
            f"billing=256,node=4|gpu[001-004]|0|sbatch").encode()


def test_a_sacct_time_out_of_range_is_a_reject_and_a_local_epoch_zero_is_absent(tmp_path):
    demo = (DEMO / "slurm" / "sacct-2024-03-01.txt").read_bytes()
    far = _sacct_row("9001", "2024-03-01T00:10:00", "9999-03-01T00:15:00", "9999-03-01T06:42:10")
    data, at = _insert(demo, far, "sacct-far", after=1)
    # time 0 written as a local time west of UTC (sacct itself writes 'Unknown'): no time, not a reject
    zero = _sacct_row("9002", "1969-12-31T16:00:00", "1969-12-31T16:00:00", "2024-03-01T06:42:10")
    path = tmp_path / "sacct-2024-03-01.txt"
    path.write_bytes(data + zero + b"\n")
    result, counts = parse_file(sacct.parse, path, "slurm")
    assert _rejects(result) == {at: "Start time '9999-03-01T00:15:00' is outside the years 1970-2100"}
    rows = result.tables["sacct_records"]
    assert "9001" not in rows["job_id"].to_list() and counts.rejects == 1
    unset = rows.filter(rows["job_id"] == "9002").row(0, named=True)
    assert unset["submit_time"] is None and unset["start_time"] is None and unset["end_time"] == datetime(2024, 3, 1, 6, 42, 10)

# 3. a sample without a host took a daily file's name as its host

@pytest.mark.parametrize("rel,host", [
    ("health/health-2024-03-01.jsonl", None), ("telemetry/dcgm-2024-03-01.csv", None),
    ("telemetry/dcgm_20240301.csv", None), ("network/perfquery-2024-03-05T06:00.txt", None),
    ("network/perfquery.txt", None), ("kernel/messages-20240301", None),
    ("health/gpu001.jsonl", "gpu001"), ("health/gpu001/2024-03-01.jsonl", "gpu001"),
    ("telemetry/gpu001.csv", "gpu001"), ("kernel/node20240301.log", "node20240301"),
    ("node_health/gpud.jsonl", None), ("node_health/nvsentinel.jsonl", None), ("node_health/events.jsonl", None),
    ("node_health/gpu001/gpud.jsonl", "gpu001"),
])
def test_a_dated_daily_file_names_no_host_but_a_per_host_file_does(rel, host):
    assert host_from_path(Path(rel)) == host


def test_a_health_line_without_a_host_in_a_daily_file_is_a_reject(tmp_path):
    demo = (DEMO / "health" / "health-2024-03-01.jsonl").read_bytes()
    line = b'{"time": "2024-03-01T06:00:00Z", "check": "check_gpu", "severity": "critical", "message": "no host"}'
    data, at = _insert(demo, line, "nohost", after=0)
    src = tmp_path / "src"
    (src / "health" / "gpu007").mkdir(parents=True)
    (src / "health" / "health-2024-03-01.jsonl").write_bytes(data)
    (src / "health" / "gpu007" / "checks.jsonl").write_bytes(line + b"\n")  # a per-host file: its folder names it
    con = warehouse.connect(tmp_path / "w.duckdb")
    try:
        out = {Path(o.path).name: o for o in ingest_directory(con, src).outcomes}
        reasons = con.execute("SELECT line_no, reason FROM rejects WHERE file LIKE '%health-2024-03-01.jsonl'").fetchall()
        hosts = {h for (h,) in con.execute("SELECT DISTINCT host FROM node_events").fetchall()}
    finally:
        con.close()
    assert out["health-2024-03-01.jsonl"].rejects == 1 and out["checks.jsonl"].rows == 1
    assert reasons == [(at, "no host field (host/node/hostname) and no host in the file name")]
    assert "gpu007" in hosts and not any(h.startswith("health") for h in hosts)


def test_a_telemetry_row_with_an_empty_host_in_a_daily_file_is_a_reject(tmp_path):
    demo = (DEMO / "telemetry" / "dcgm-2024-03-01.csv").read_bytes()
    header = demo.splitlines()[0].decode().split(",")
    row = demo.splitlines()[1].decode().split(",")
    row[[h.lower() for h in header].index("host")] = ""
    data, at = _insert(demo, ",".join(row).encode(), "emptyhost", after=1)
    path = tmp_path / "telemetry" / "dcgm-2024-03-01.csv"
    path.parent.mkdir()
    path.write_bytes(data)
    result, counts = parse_file(telemetry.parse, path, "telemetry")
    assert _rejects(result)[at].startswith("no host:") and counts.rejects == 1
    assert "dcgm-2024-03-01" not in set(result.tables["telemetry"]["host"])


# 4. a line of NUL bytes was skipped as blank, in every text source

@pytest.mark.parametrize("junk", [b"\x00" * 50, b"\x01\x02\x03", b"\x00 \x00\t\x00\r", b"\x7f\x1b", b"\x1b"])
@pytest.mark.parametrize("case", sorted(CASES))
def test_a_line_of_nul_or_control_bytes_is_a_reject_in_every_source(tmp_path, case, junk):
    path, folder = _write_case(tmp_path, case, 5)
    data, at = _insert(path.read_bytes(), junk, f"{case}-{junk!r}")
    path.write_bytes(data)
    lines = read_lines(path)
    assert lines.rejects.filter(lines.rejects["line_no"] == at)["reason"].to_list() == [CONTROL_REASON]
    assert CONTROL_NOTE in lines.problems
    host = "gpu006" if folder == "benchmarks" else (path.name.split(".")[0] if folder == "kernel" else None)
    ctx = ParseContext(path=path, source=folder, host_hint=host, options=IngestOptions(syslog_year=2024))
    account(parser_for(folder).parse(lines.lines, ctx), lines)  # every other line still accounted for
    stream = LineStream(path, chunk_bytes=4096)  # the streamed read (a large log) says the same
    for _ in stream.frames():
        pass
    assert stream.rejects.filter(stream.rejects["line_no"] == at)["reason"].to_list() == [CONTROL_REASON]
    assert CONTROL_NOTE in stream.problems


def test_a_line_of_nul_bytes_is_a_reject_when_small_files_are_read_as_a_batch(tmp_path):
    src = tmp_path / "src"
    (src / "kernel").mkdir(parents=True)
    demo = (DEMO / "kernel" / "gpu003.log").read_bytes()
    for i in range(4):
        (src / "kernel" / f"gpu00{i}.log").write_bytes(demo)
    (src / "kernel" / "gpu001.log").write_bytes(_insert(demo, b"\x00" * 50, "nul")[0])
    (src / "kernel" / "gpu002.log").write_bytes(_insert(demo, b"\x01\x02\x03", "ctl")[0])
    con = warehouse.connect(tmp_path / "w.duckdb")
    try:
        out = {Path(o.path).name: o for o in ingest_directory(con, src, IngestOptions(syslog_year=2024)).outcomes}
        reasons = con.execute("SELECT file, reason FROM rejects WHERE reason LIKE 'binary/NUL%'").fetchall()
    finally:
        con.close()
    assert {Path(f).name for f, _ in reasons} == {"gpu001.log", "gpu002.log"} and len(reasons) == 2
    assert out["gpu001.log"].rejects == out["gpu000.log"].rejects + 1 and CONTROL_NOTE in out["gpu002.log"].message


# 5. a UTF-16 job log was read as 29 skipped lines; every other source called it unrecognised for its own reason

@pytest.mark.parametrize("encoding,bom", [("utf-16-le", b"\xff\xfe"), ("utf-16-le", b""), ("utf-16-be", b"\xfe\xff"),
                                          ("utf-16-be", b"")])
@pytest.mark.parametrize("case", sorted(CASES))
def test_a_utf16_file_is_unrecognised_in_every_source(tmp_path, case, encoding, bom):
    path, folder = _write_case(tmp_path, case, 6)
    path.write_bytes(bom + path.read_bytes().decode("utf-8", errors="replace").encode(encoding))
    with pytest.raises(UnrecognisedFormat, match=f"{encoding.upper().replace('-16-', '-16')} text .*not UTF-8"):
        read_lines(path)
    with pytest.raises(UnrecognisedFormat, match="not UTF-8"):
        list(LineStream(path).frames())


def test_a_utf16_job_log_is_recorded_unrecognised_with_the_reason(tmp_path):
    text = (FIXTURES / "joblogs" / "slurm-7001.out").read_text()
    src = tmp_path / "src"
    (src / "joblogs").mkdir(parents=True)
    (src / "joblogs" / "slurm-7001.out").write_bytes(b"\xff\xfe" + text.encode("utf-16-le"))
    (src / "joblogs" / "slurm-7002.out").write_bytes(text.encode("utf-16-le"))
    (src / "joblogs" / "slurm-7003.out").write_text(text)  # the same log in UTF-8
    con = warehouse.connect(tmp_path / "w.duckdb")
    try:
        out = {Path(o.path).name: o for o in ingest_directory(con, src).outcomes}
        raws = dict(con.execute("SELECT file, raw FROM rejects WHERE line_no IS NULL").fetchall())
    finally:
        con.close()
    for name, mark in (("slurm-7001.out", "byte-order mark FF FE"), ("slurm-7002.out", "a NUL byte beside every character")):
        assert out[name].status == "unrecognised" and f"UTF-16LE text ({mark})" in out[name].message, out[name]
    assert out["slurm-7003.out"].status == "ok" and out["slurm-7003.out"].rows > 0
    assert {Path(f).name: r for f, r in raws.items()}["slurm-7001.out"] == text.splitlines()[0]  # shown as text


def test_a_file_with_a_few_nuls_or_a_stray_ff_fe_is_not_utf16(tmp_path):
    from analysis.ingest.lines import utf16

    assert utf16(b"\x00\x00\x00\x00Mar  1 10:00:00 gpu001 kernel: x\n") is None  # NULs of a hard reset
    assert utf16(b"\xff\xfe not a sacct dump\n") is None
    assert utf16("a\nb\n".encode("utf-16-le")) == "UTF-16LE" and utf16("JobID|x\n".encode("utf-16")) is not None


# 6. a FIFO and a link to a file of the tree left no ingested_files row and no reject

def _ingest_in_a_thread(tmp_path, src):
    """ingest_directory, failing (not hanging) if it blocks on a FIFO."""
    done: dict = {}

    def run():
        con = warehouse.connect(tmp_path / "w.duckdb")
        try:
            done["out"] = {Path(o.path).name: o for o in ingest_directory(con, src, IngestOptions(syslog_year=2024)).outcomes}
            done["files"] = {Path(p).name: (s, m) for p, s, m in con.execute(
                "SELECT path, status, message FROM ingested_files").fetchall()}
            done["rejects"] = con.execute("SELECT file, line_no, reason FROM rejects WHERE line_no IS NULL").fetchall()
            done["events"] = con.execute("SELECT count(*) FROM node_events").fetchall()[0][0]
        finally:
            con.close()

    worker = threading.Thread(target=run, daemon=True)
    worker.start()
    worker.join(120)
    if worker.is_alive():  # unblock it: open the FIFO's other end
        for fifo in src.rglob("*"):
            if fifo.is_fifo():
                with open(fifo, "wb"):
                    pass
        pytest.fail("the ingest blocked on a FIFO")
    return done


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no FIFOs here")
def test_a_fifo_is_recorded_without_being_opened(tmp_path):
    src = tmp_path / "src"
    (src / "kernel").mkdir(parents=True)
    (src / "health").mkdir()
    (src / "kernel" / "gpu001.log").write_bytes((DEMO / "kernel" / "gpu003.log").read_bytes())
    os.mkfifo(src / "kernel" / "gpu002.log")
    os.mkfifo(src / "health" / "gpu003.jsonl")
    (src / "kernel" / "gpu004.log").symlink_to("gpu002.log")  # a link to the FIFO: refused the same way
    got = _ingest_in_a_thread(tmp_path, src)
    for name in ("gpu002.log", "gpu003.jsonl", "gpu004.log"):
        assert got["out"][name].status == "unrecognised" and "FIFO (named pipe)" in got["out"][name].message
        assert got["files"][name][0] == "unrecognised"
    assert sorted(Path(f).name for f, _, _ in got["rejects"]) == ["gpu002.log", "gpu003.jsonl", "gpu004.log"]
    assert all("not opened, nothing read" in r for _, _, r in got["rejects"])
    assert got["out"]["gpu001.log"].status == "ok" and got["events"] > 0


def test_a_link_to_a_file_of_the_tree_is_a_duplicate_of_it(tmp_path):
    src = tmp_path / "src"
    (src / "kernel" / "gpu001").mkdir(parents=True)
    (src / "switch").mkdir()
    (src / "mystery").mkdir()
    demo = (DEMO / "kernel" / "gpu003.log").read_bytes()
    (src / "kernel" / "gpu001" / "2024-03-01.log").write_bytes(demo)
    (src / "kernel" / "gpu001" / "current.log").symlink_to("2024-03-01.log")  # same host: a plain copy
    (src / "kernel" / "gpu009.log").symlink_to(src / "kernel" / "gpu001" / "2024-03-01.log")  # another host's name
    (src / "switch" / "leaf01.log").symlink_to("../kernel/gpu001/2024-03-01.log")  # another source
    (src / "mystery" / "notes.log").write_bytes(demo)
    (src / "kernel" / "gpu008.log").symlink_to("../mystery/notes.log")  # a file no source reads
    got = _ingest_in_a_thread(tmp_path, src)
    target = str((src / "kernel" / "gpu001" / "2024-03-01.log").resolve())
    for name in ("current.log", "gpu009.log", "leaf01.log"):
        assert got["out"][name].status == "duplicate" and f"same file as {target}" in got["out"][name].message
        assert got["files"][name][0] == "duplicate"
    assert got["out"]["gpu008.log"].status == "unrecognised" and "no source folder" in got["out"]["gpu008.log"].message
    assert got["out"]["2024-03-01.log"].rows == got["events"]  # the rows of the file once, none through its links
    con = warehouse.connect(tmp_path / "w.duckdb")
    try:  # a rerun: nothing read again, no duplicate read "for real" as the copy of a changed file
        again = {Path(o.path).name: o.status for o in ingest_directory(con, src, IngestOptions(syslog_year=2024)).outcomes}
        assert con.execute("SELECT count(*) FROM node_events").fetchall()[0][0] == got["events"]
    finally:
        con.close()
    assert len(again) == 6 and {again[n] for n in ("current.log", "gpu009.log", "leaf01.log")} <= {"duplicate", "unchanged"}
