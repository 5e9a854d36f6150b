"""sacctmgr show event -P parser: hostlists, '|' in Reason, Unknown end, cluster events."""
from datetime import datetime

import pytest

from analysis.model import IngestOptions, UnrecognisedFormat
from analysis.parsers import slurm_events
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
