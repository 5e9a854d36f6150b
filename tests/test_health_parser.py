"""Health-check parser: JSON lines with alias keys, LBNL NHC log file and syslog."""
from datetime import datetime

import pytest

from analysis.ingest.contract import IngestOptions, UnrecognisedFormat
from analysis.ingest.parsers import health
from conftest import parse_file

JSONL = """\
{"time": "2024-01-15T10:00:00Z", "host": "gpu001", "check": "gpu_count", "severity": "OK", "message": "8 GPUs"}
{"timestamp": 1705313100, "node": "gpu002", "name": "ib_link", "status": "Critical", "msg": "mlx5_0 port 1 down"}
{"ts": "2024-01-15 11:00:00", "hostname": "gpu003", "check_name": "dcgm_diag", "level": "warning", "details": "PCIe replay"}

{"time": "2024-01-15T10:00:00Z", "host": "gpu001", "check": "gpu_count"
{"host": "gpu004", "check": "x", "severity": "ok"}
{"time": "yesterday", "host": "gpu004", "check": "x"}
{"time": "2024-01-15T10:00:00+01:00", "host": "gpu005", "severity": "pass"}
"""

# nhc.log as written by mej/nhc: die() logs 'Health check failed:  <check>:  <detail>'
# then 'ERROR:  nhc:  Health check failed:  ...'; NHC_TS=1 prefixes '[epoch] - '.
NHC_LOG = """\
Node Health Check starting.
Running check:  "check_fs_mount_rw /"
Node Health Check completed successfully (1s).
[1705314225] - Node Health Check starting.
[1705314225] - Running check:  "check_hw_ib 100 mlx5_0:1"
[1705314226] - Health check failed:  check_hw_ib:  No IB port mlx5_0:1 is ACTIVE (LinkUp 100 Gb/sec).
[1705314226] - ERROR:  nhc:  Health check failed:  check_hw_ib:  No IB port mlx5_0:1 is ACTIVE (LinkUp 100 Gb/sec).
Health check failed:  check_fs_mount:  /scratch not mounted
[1705314526] - check_fs_mount:  /scratch not mounted (non-fatal)
[1705314826] - Node Health Check completed successfully (2s).
"""

SYSLOG = """\
Jan 15 10:23:45 gpu001 nhc[1234]: Health check failed:  check_fs_mount:  /scratch not mounted
Jan 15 10:23:46 gpu001 kernel: [12345.678] unrelated kernel line
2024-01-15T10:30:00.123456+00:00 gpu002 nhc[99]: Health check failed:  check_ps_service:  Service sshd not running
Jan 15 10:40:00 gpu003 nhc[77]: WARNING:  Possible bogus check:  check_fs_free on pseudofilesystem /dev/shm
Jan 15 10:45:00 gpu003 nhc[77]: Health check failed:  Watchdog timer unable to terminate hung NHC process 4242.
"""


def _write(tmp_path, name, text):
    path = tmp_path / name
    path.write_text(text)
    return path


def test_jsonl_aliases_epoch_and_rejects(tmp_path):
    result, counts = parse_file(health.parse, _write(tmp_path, "checks.jsonl", JSONL), "health", host_hint=None)
    ev = result.tables["node_events"]
    assert counts.row_lines == 3 and counts.rejects == 4 and counts.skipped == 1
    assert ev["code"].to_list() == ["gpu_count", "ib_link", "dcgm_diag"]
    assert ev["severity"].to_list() == ["ok", "critical", "warning"]  # lowercased as written
    assert ev["event_time"].to_list()[1] == datetime(2024, 1, 15, 10, 5, 0)  # epoch seconds
    assert ev["host"].to_list() == ev["reporter"].to_list() == ["gpu001", "gpu002", "gpu003"]
    assert set(ev["source"]) == {"health"} and set(ev["kind"]) == {"health_check"}
    assert ev["device"].null_count() == 3 and ev["message"][1] == "mlx5_0 port 1 down"
    reasons = dict(zip(result.rejects["line_no"], result.rejects["reason"]))
    assert reasons[5].startswith("invalid JSON") and "time" in reasons[6] and "yesterday" in reasons[7]
    assert "check" in reasons[8]


def test_jsonl_host_from_file_name(tmp_path):
    text = '{"time": "2024-01-15T10:00:00", "check": "nvme", "severity": "ERROR"}\n'
    result, _ = parse_file(health.parse, _write(tmp_path, "gpu042.jsonl", text), "health")
    assert result.tables["node_events"].row(0, named=True)["host"] == "gpu042"


def test_nhc_log_file(tmp_path):
    result, counts = parse_file(health.parse, _write(tmp_path, "gpu007.log", NHC_LOG), "health")
    ev = result.tables["node_events"]
    # 1 failure (its ERROR copy merged), 1 non-fatal warning, 1 timestamped success
    assert counts.row_lines == 3 and counts.merged == 1 and counts.rejects == 1 and counts.skipped == 5
    fail = ev.row(0, named=True)
    assert fail["code"] == "check_hw_ib" and fail["severity"] == "critical" and fail["host"] == "gpu007"
    assert fail["message"].startswith("No IB port mlx5_0:1 is ACTIVE")
    assert fail["event_time"] == datetime(2024, 1, 15, 10, 23, 46)
    assert ev["severity"].to_list() == ["critical", "warning", "ok"]
    # a failure with no timestamp cannot be placed in time: rejected, not dropped
    assert result.rejects["line_no"].to_list() == [8]
    assert "timestamp" in result.rejects["reason"][0]


def test_nhc_syslog(tmp_path):
    result, counts = parse_file(health.parse, _write(tmp_path, "messages", SYSLOG), "health",
                                IngestOptions(syslog_year=2024, tz="UTC"))
    ev = result.tables["node_events"]
    assert counts.row_lines == 4 and counts.skipped == 1  # the kernel line is not NHC's
    assert ev["code"].to_list() == ["check_fs_mount", "check_ps_service", "nhc", "nhc"]
    assert ev["severity"].to_list() == ["critical", "critical", "warning", "critical"]
    assert ev["host"].to_list() == ["gpu001", "gpu002", "gpu003", "gpu003"]
    assert ev["event_time"][0] == datetime(2024, 1, 15, 10, 23, 45)
    assert ev["message"][0] == "/scratch not mounted"


def test_syslog_local_zone(tmp_path):
    line = "Jul  1 12:00:00 gpu001 nhc[1]: Health check failed:  check_hw_gpu:  GPU 3 missing\n"
    result, _ = parse_file(health.parse, _write(tmp_path, "messages", line), "health",
                           IngestOptions(syslog_year=2024, tz="America/New_York"))
    assert result.tables["node_events"]["event_time"][0] == datetime(2024, 7, 1, 16, 0, 0)


def test_unrecognised(tmp_path):
    with pytest.raises(UnrecognisedFormat):
        parse_file(health.parse, _write(tmp_path, "x.log", "hello world\nfoo bar\n"), "health")


def test_lines_that_are_not_results_are_rejected_not_skipped(tmp_path):
    # before: any line not starting with '{' that was not NHC output was skipped without a trace
    text = (JSONL.splitlines()[0] + "\n"
            "hello world\n"
            '  ["gpu001", "ok"]\n'
            "Jan 15 10:23:47 gpu001 nhc[1234]: NHC watchdog timer 4242 (300 secs) has expired\n"
            "[1705314826] - ERROR:  nhc:  Unable to write to results file\n"
            "Jan 15 10:23:46 gpu001 kernel: [12345.678] unrelated kernel line\n"
            "\n")
    result, counts = parse_file(health.parse, _write(tmp_path, "checks.jsonl", text), "health",
                                IngestOptions(syslog_year=2024))
    reasons = dict(zip(result.rejects["line_no"], result.rejects["reason"]))
    assert counts.row_lines == 1 and counts.skipped == 2  # the other program's syslog line and the blank line
    assert reasons == {
        2: "not a health-check line: neither a JSON object ({...}) nor an NHC log or syslog line",
        3: "not a health-check line: neither a JSON object ({...}) nor an NHC log or syslog line",
        4: "NHC message that is neither a check result nor a progress note",
        5: "NHC message that is neither a check result nor a progress note"}


def test_hostile_json_lines_are_rejected_one_by_one(tmp_path):
    good = '{"time": "2024-01-15T10:00:00Z", "host": "gpu%03d", "check": "gpu_count", "severity": "ok"}'
    lines = [good % i for i in range(300)]
    lines[100] = good[:-1] % 1 + ', "extra": ' + "9" * 400 + "}"
    lines[150] = good[:-1] % 2 + ', "extra": ' + "[" * 100000 + "}"
    lines[200] = good[:40]
    lines[250] = good[:-1] % 3 + ', "extra": NaN}'  # Python's json writes NaN; polars cannot read it
    result, counts = parse_file(health.parse, _write(tmp_path, "checks.jsonl", "\n".join(lines) + "\n"), "health")
    reasons = dict(zip(result.rejects["line_no"], result.rejects["reason"]))
    assert counts.row_lines == 297 and reasons == {
        101: "number too large (beyond the range of a 64-bit float)",
        151: "JSON nested deeper than 64 levels",
        201: "invalid JSON: the line ends before the object is closed (cut off?)"}
    assert result.tables["node_events"].filter(result.tables["node_events"]["line_no"] == 251)["host"].to_list() == [
        "gpu003"]
