"""One XID read twice: NVSentinel's syslog-health-monitor reads the kernel log kernel/ holds, so a cluster that
collects both has each XID as a dmesg line and as a node_health event (sql/derive/stage_xid_twins.sql). The copy
stays in node_events and is classified out; every count downstream sees the fault once."""
import json
import shutil
from datetime import datetime, timedelta
from pathlib import Path

import duckdb
import polars as pl

from analysis import sql, warehouse
from analysis.derive import attribution
from analysis.derive.taxonomy import XID_KEPT, XID_TWIN, load
from analysis.ingest.engine import ingest_directory
from analysis.nodes import lemons
from analysis.simulate.config import preset
from analysis.simulate.run import simulate
from assets.pure_builds import build_all
from tests.test_taxonomy import _events

T0 = datetime(2024, 3, 1, 10)


def _ev(line, source, code, seconds, host="n1", device="0000:3b:00", kind="xid"):
    return {"event_time": T0 + timedelta(seconds=seconds), "host": host, "source": source, "kind": kind,
            "code": code, "severity": None, "message": f"xid {code}", "device": device, "reporter": host,
            "file": source, "line_no": line}


def _dropped(rows, scan_from=None, twin_s=300) -> set[int]:
    """The line numbers stage_xid_twins leaves out of classification, on a warehouse holding ``rows``."""
    con = warehouse.connect(":memory:")
    _events(con, rows)
    con.execute("CREATE TEMP TABLE classify_dropped (event_row BIGINT)")
    sql.run(con, "derive/stage_xid_twins", {"scan_from": scan_from, "twin_s": twin_s, "kept_source": XID_KEPT,
                                            "twin_source": XID_TWIN})
    got = {r[0] for r in con.execute("SELECT line_no FROM node_events WHERE rowid IN "
                                     "(SELECT event_row FROM temp.classify_dropped)").fetchall()}
    con.close()
    return got


def test_a_node_health_xid_with_a_kernel_twin_is_left_out():
    rows = [_ev(1, "kernel", "79", 0), _ev(2, "kernel", "79", 1),  # a repeated dmesg XID: both stay
            _ev(10, "node_health", "79", 8, device="0000:3B:00.0"),  # the copy, the PCI address written otherwise
            _ev(11, "node_health", "79", 23),  # NVSentinel reporting it again
            _ev(12, "node_health", "79", -40, device="GPU-6d1c"),  # a drifted dmesg -T time, the GPU by its UUID
            _ev(13, "node_health", "79", 9, device="0000:86:00"),  # another GPU: another fault
            _ev(14, "node_health", "48", 8),  # another code
            _ev(15, "node_health", "79", 8, host="n2"),  # another node
            _ev(16, "node_health", "79", 302),  # beyond the window (5 min)
            _ev(20, "node_health", "31", 3600), _ev(21, "node_health", "31", 3605)]  # no dmesg twin: both stay
    assert _dropped(rows) == {10, 11, 12}
    assert _dropped(rows, twin_s=600) == {10, 11, 12, 16}
    # an extended build stages the twins from scan_from on, their kernel lines from the window before it
    assert _dropped(rows, scan_from=T0 + timedelta(seconds=5)) == {10, 11}


def test_an_nvswitch_sxid_twin_is_left_out_too():
    """NVSentinel's SysLogsSXIDError is kind 'sxid' as the kernel's SXid line is: its copy is left out; an XID of
    the same number is another fault (the kind is part of the twin)."""
    rows = [_ev(1, "kernel", "12028", 0, device="0000:c4:00", kind="sxid"),
            _ev(2, "node_health", "12028", 8, device="0000:c4:00.0", kind="sxid"),
            _ev(3, "node_health", "12028", 9, device="0000:c4:00"),  # an XID 12028 (none exists): not its twin
            _ev(4, "node_health", "24007", 9, device="0000:c4:00", kind="sxid")]  # another SXID
    assert _dropped(rows) == {2}


def test_classified_once_from_the_kernel_line(tmp_path):
    con = warehouse.connect(tmp_path / "w.duckdb")
    _events(con, [_ev(1, "kernel", "79", 0), _ev(2, "node_health", "79", 8), _ev(3, "node_health", "79", 3600)])
    attribution.classify_events(con, load())
    got = con.execute("SELECT source, line_no, rule FROM classified_events ORDER BY line_no").fetchall()
    stored = con.execute("SELECT count(*) FROM node_events").fetchall()[0][0]
    con.close()
    assert got == [("kernel", 1, "xid-79"), ("node_health", 3, "xid-79")] and stored == 3


def test_the_window_is_the_operators(tmp_path):
    """windows.xid_twin_minutes in a rules file: 0 merges only a copy stamped with the line's own second."""
    rules = tmp_path / "rules.yaml"
    rules.write_text("windows: {xid_twin_minutes: 0}\n")
    assert load().twin_s == 300 and load(rules).twin_s == 0
    con = warehouse.connect(tmp_path / "w.duckdb")
    _events(con, [_ev(1, "kernel", "79", 0), _ev(2, "node_health", "79", 0), _ev(3, "node_health", "79", 8)])
    attribution.classify_events(con, load(rules))
    got = con.execute("SELECT line_no FROM classified_events ORDER BY line_no").fetchall()
    con.close()
    assert got == [(1,), (3,)]


def _health_events(kernel_xids: pl.DataFrame) -> list[str]:
    """NVSentinel's SysLogsXIDError event for each dmesg XID, as its syslog monitor writes it: stamped by the poll
    that read the line (8 s later), every third reported again at the next poll."""
    out = []
    for i, x in enumerate(kernel_xids.iter_rows(named=True)):
        for k in range(2 if i % 3 == 0 else 1):
            out.append({"version": 1, "agent": "syslog-health-monitor", "componentClass": "GPU",
                        "checkName": "SysLogsXIDError", "isFatal": True, "isHealthy": False,
                        "message": f"XID {x['code']}; Resolution: RESTART_BM", "recommendedAction": "RESTART_BM",
                        "errorCode": [x["code"]],
                        "entitiesImpacted": [{"entityType": "PCI", "entityValue": x["device"]}],
                        "generatedTimestamp": (x["event_time"] + timedelta(seconds=8 + 15 * k)).isoformat() + "Z",
                        "nodeName": x["host"]})
    return [json.dumps(e) for e in out]


TABLES = {"classified_events": "event_time, host, file, line_no", "failure_attribution": "job_id, instance, host, rule",
          "node_incidents": "incident_id"}


def _build(db: Path, src: Path, as_of: datetime) -> dict[str, pl.DataFrame]:
    con = warehouse.connect(db)
    ingest_directory(con, src)
    build_all(con, load())
    got = {t: con.sql(f"SELECT * FROM {t} ORDER BY {order}").pl() for t, order in TABLES.items()}
    got["lemon_features"] = lemons.build_features(con, [as_of - timedelta(days=3), as_of])
    got["xids"] = con.sql("SELECT source, count(*) AS n FROM node_events WHERE kind = 'xid' GROUP BY 1 ORDER BY 1").pl()
    con.close()
    return got


def _same(a: dict, b: dict) -> None:
    for table in (*TABLES, "lemon_features"):
        assert a[table].equals(b[table]), table


def test_nvsentinel_copies_of_the_dmesg_xids_change_no_count(tmp_path):
    src = tmp_path / "src"
    simulate(preset("small", nodes=24, days=8), src)
    as_of = datetime(2024, 3, 9)
    alone = _build(tmp_path / "a.duckdb", src, as_of)
    assert alone["failure_attribution"].filter(pl.col("rule").str.starts_with("xid-")).height > 0
    with duckdb.connect(str(tmp_path / "a.duckdb"), read_only=True) as con:
        kernel = con.sql("SELECT host, code, device, event_time FROM node_events WHERE source = 'kernel' "
                         "AND kind = 'xid' ORDER BY event_time, host").pl()
    shutil.copyfile(tmp_path / "a.duckdb", tmp_path / "extended.duckdb")
    lines = _health_events(kernel)
    (src / "node_health").mkdir()
    (src / "node_health" / "nvsentinel.jsonl").write_text("\n".join(lines) + "\n")
    both = _build(tmp_path / "b.duckdb", src, as_of)
    assert both["xids"].rows() == [("kernel", kernel.height), ("node_health", len(lines))]  # every copy stored
    _same(alone, both)
    _same(alone, _build(tmp_path / "extended.duckdb", src, as_of))  # the tables extended, not rebuilt

    # an XID only NVSentinel saw (no dmesg line near it) is counted
    lone = json.loads(lines[0]) | {"errorCode": ["95"], "nodeName": "gpu0005",
                                   "generatedTimestamp": "2024-03-07T12:00:00Z"}
    (src / "node_health" / "lone.jsonl").write_text(json.dumps(lone) + "\n")
    more = _build(tmp_path / "b.duckdb", src, as_of)
    added = more["classified_events"].join(both["classified_events"], on=["file", "line_no", "host"], how="anti")
    assert added.select("host", "source", "code", "rule").rows() == [("gpu0005", "node_health", "95", "xid-95")]
    assert more["node_incidents"].height > both["node_incidents"].height
