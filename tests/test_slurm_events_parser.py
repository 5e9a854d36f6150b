"""sacctmgr show event -P parser: hostlists, '|' in Reason, Unknown end, cluster events."""
from datetime import datetime

import pytest

from analysis.ingest.contract import IngestOptions, UnrecognisedFormat
from analysis.ingest.parsers import slurm_events
from conftest import parse_file

# Shape per Slurm's src/sacctmgr/event_functions.c: User is 'name(uid)' or empty,
# TimeEnd 'Unknown' while the event is open, cluster events have no NodeName/State.
EVENTS = """\
NodeName|TimeStart|TimeEnd|State|Reason|User
|2024-01-10T08:00:00|Unknown||Cluster Registered TRES|
gpu[001-003]|2024-01-15T10:23:45|2024-01-15T14:00:00|DRAIN|NHC: check_fs_mount:  /scratch not mounted|root(0)
gpu004|2024-01-16T09:00:00|Unknown|DOWN*|Not responding|slurm(64030)
gpu005|2024-01-16T11:30:00|Unknown|IDLE+DRAIN|xid 79 | GPU fell off the bus | RMA|alice(1001)

gpu[007|2024-01-16T11:30:00|Unknown|DRAIN|bad hostlist|root(0)
gpu008|not-a-time|Unknown|DRAIN|bad time|root(0)
gpu009|2024-01-16T11:30:00
"""


def _write(tmp_path, text, name="events.txt"):
    path = tmp_path / name
    path.write_text(text)
    return path


def test_events_hostlist_pipe_in_reason_and_accounting(tmp_path):
    result, counts = parse_file(slurm_events.parse, _write(tmp_path, EVENTS), "slurm",
                                IngestOptions(tz="Europe/Berlin"))
    periods = result.tables["node_state_periods"]
    events = result.tables["node_events"]
    assert counts.lines == 9 and counts.skipped == 2 and counts.rejects == 3 and counts.row_lines == 4
    assert periods.height == events.height == 6  # gpu[001-003] gives three rows
    drained = periods.filter(periods["line_no"] == 3)
    assert drained["host"].to_list() == ["gpu001", "gpu002", "gpu003"]
    assert drained["time_start"][0] == datetime(2024, 1, 15, 9, 23, 45)  # Berlin -> UTC
    assert drained["time_end"][0] == datetime(2024, 1, 15, 13, 0, 0)
    assert drained["user_name"][0] == "root"
    gpu5 = periods.filter(periods["host"] == "gpu005").row(0, named=True)
    assert gpu5["reason"] == "xid 79 | GPU fell off the bus | RMA"
    assert gpu5["user_name"] == "alice" and gpu5["time_end"] is None and gpu5["state"] == "IDLE+DRAIN"
    cluster = periods.filter(periods["line_no"] == 2).row(0, named=True)
    assert cluster["host"] is None and cluster["reason"] == "Cluster Registered TRES"
    ev = events.filter(events["host"] == "gpu004").row(0, named=True)
    assert ev["code"] == "DOWN*" and ev["source"] == "slurm" and ev["kind"] == "node_state"
    assert ev["reporter"] == "slurmctld" and ev["severity"] is None and ev["message"] == "Not responding"
    reasons = dict(zip(result.rejects["line_no"], result.rejects["reason"]))
    assert "hostlist" in reasons[7] and "TimeStart" in reasons[8] and "fields" in reasons[9]


def test_headerless_default_order_and_trailing_pipe(tmp_path):
    text = "gpu[01-02]|2024-02-01T00:00:00|2024-02-01T01:00:00|down|Kill task failed|root(0)\n"
    result, counts = parse_file(slurm_events.parse, _write(tmp_path, text), "slurm")
    assert result.format == "sacctmgr-event-noheader" and counts.row_lines == 1
    assert result.tables["node_events"]["code"].to_list() == ["DOWN", "DOWN"]
    # sacctmgr -p (not -P) ends every line with '|'; Cluster column in front
    text = ("Cluster|NodeName|TimeStart|TimeEnd|State|Reason|User|\n"
            "c1|gpu001|2024-02-01T00:00:00|Unknown|DRAIN|a|b|root(0)|\n")
    result, _ = parse_file(slurm_events.parse, _write(tmp_path, text, "p.txt"), "slurm")
    row = result.tables["node_state_periods"].row(0, named=True)
    assert row["reason"] == "a|b" and row["user_name"] == "root" and row["host"] == "gpu001"


def test_not_sacctmgr_output(tmp_path):
    with pytest.raises(UnrecognisedFormat):
        parse_file(slurm_events.parse, _write(tmp_path, "JobID|State\n1|FAILED\n"), "slurm")


# Two daily dumps (sacctmgr show event Start=<day> End=<next day> Event=Node): sacctmgr lists every event that
# overlaps the window, so gpu001's drain across midnight is in both (open in the first, ended in the second) and
# gpu004's DOWN, still open, is in both unchanged.
DAY1 = """\
NodeName|TimeStart|TimeEnd|State|Reason|User
gpu001|2024-03-01T22:00:00|Unknown|DRAIN|healthcheck: gpu_count: expected 8 GPUs, found 7|root(0)
gpu002|2024-03-01T08:00:00|2024-03-01T09:00:00|DOWN|Not responding|slurm(64030)
gpu004|2024-03-01T23:00:00|Unknown|DOWN|Not responding|slurm(64030)
"""
DAY2 = """\
NodeName|TimeStart|TimeEnd|State|Reason|User
gpu001|2024-03-01T22:00:00|2024-03-02T06:00:00|DRAIN|healthcheck: gpu_count: expected 8 GPUs, found 7|root(0)
gpu003|2024-03-02T10:00:00|Unknown|DRAIN|bad dimm|alice(1001)
gpu004|2024-03-01T23:00:00|Unknown|DOWN|Not responding|slurm(64030)
"""


def test_an_event_in_two_daily_dumps_counts_once(tmp_path):
    from analysis import warehouse
    from analysis.nodes import lemons
    from analysis.ingest.engine import ingest_directory
    from analysis.derive.taxonomy import load
    from assets.pure_builds import build_all

    folder = tmp_path / "src" / "slurm_events"
    folder.mkdir(parents=True)
    (folder / "events-2024-03-01.txt").write_text(DAY1)
    (folder / "events-2024-03-02.txt").write_text(DAY2)
    con = warehouse.connect(tmp_path / "w.duckdb")
    ingest_directory(con, tmp_path / "src")
    # every line is kept as read, with its file and line: nothing lost, nothing rejected
    assert con.execute("SELECT count(*) FROM node_state_periods").fetchall()[0][0] == 6
    assert con.execute("SELECT count(*) FROM rejects").fetchall()[0][0] == 0
    # the derived view has each event once; the one that knows its end wins
    states = con.sql("SELECT host, time_end, file FROM node_states ORDER BY host").pl()
    assert states["host"].to_list() == ["gpu001", "gpu002", "gpu003", "gpu004"]
    first = states.row(0, named=True)
    assert first["time_end"] == datetime(2024, 3, 2, 6) and first["file"].endswith("events-2024-03-02.txt")
    assert states.filter(states["host"] == "gpu004")["file"][0].endswith("events-2024-03-02.txt")  # the newer dump
    out = con.sql("SELECT host FROM nodes_out_of_service(DATE '2024-03-02') ORDER BY host").pl()["host"].to_list()
    assert out == ["gpu003", "gpu004"]
    # the lemon signals count gpu004's DOWN once, and its hours once
    build_all(con, load())
    feats = lemons.build_features(con, [datetime(2024, 3, 3)])
    gpu004 = feats.filter(feats["host"] == "gpu004").row(0, named=True)
    assert (gpu004["out_of_service"], gpu004["hours_out_of_service"]) == (1, 25.0)
    con.close()
