"""node_health/ reads kube-state-metrics' kube_node_status_condition (analysis/ingest/parsers/ksm.py): a text
scrape (verbatim lines of kube-state-metrics' own test, tests/fixtures/node_health/SOURCES.md) and a range-query
answer; one event where a condition changes, none for a steady state; overlapping files counted once."""
import json
from datetime import datetime, timedelta
from pathlib import Path

import polars as pl

from analysis import warehouse
from analysis.derive import attribution
from analysis.derive.taxonomy import load
from analysis.ingest.contract import IngestOptions, ParseContext
from analysis.ingest.engine import ingest_directory
from analysis.ingest.parsers import ksm, node_health
from analysis.ingest.parts import combine
from conftest import parse_file
from tests.test_taxonomy import _events

FIXTURES = Path(__file__).parent / "fixtures" / "node_health"
T0 = datetime(2025, 1, 15, 10)


def _ev(frame: pl.DataFrame) -> list[tuple]:
    return frame.sort("event_time", "host", "code").select(
        "event_time", "host", "kind", "code", "severity").rows()


def test_exposition_verbatim_lines(tmp_path):
    """kube-state-metrics' node_test.go exposition: node 127.0.0.3 is Ready=false (its first sample: an event),
    its other conditions hold false (none); node 127.0.0.1 is unschedulable (a cordon); taints, capacity: skipped
    with their reason. No timestamp in a scrape: the date in the file's name."""
    result, counts = parse_file(node_health.parse, FIXTURES / "ksm-node_test-2025-03-01.prom", "node_health")
    assert _ev(result.tables["node_events"]) == [
        (datetime(2025, 3, 1), "127.0.0.1", "cordon", "unschedulable", "info"),
        (datetime(2025, 3, 1), "127.0.0.3", "node_not_ready", "Ready", "critical")]
    assert result.tables["node_events"]["reporter"].to_list() == ["kube-state-metrics"] * 2
    assert result.tables["node_events"]["line_no"].to_list() == [9, 17]  # status="false" 1; unschedulable 1
    assert (counts.rows, counts.rejects, counts.skipped) == (2, 0, 17)  # 4 comments, 5 other series, 8 samples
    assert result.problems == [f"5 lines: {ksm.OTHER_SERIES}"] and result.format == "kube-state-metrics-text"


def test_range_query_answer_condition_true_then_false():
    """The answer's KernelDeadlock turns true at 10:01:30 (os_kernel, warning) and false at 10:03:00
    (health_ok); Ready holds true (no event); 0 samples: skipped; the unschedulable series (1 at 10:00, the
    answer's first sample: nothing known before it): a cordon; NaN: a reject."""
    path = FIXTURES / "ksm_range_query.json"
    ctx = ParseContext(path=path, source="node_health", host_hint=None)
    result = combine(node_health.json_parts(iter([path.read_bytes()]), ctx))
    assert _ev(result.tables["node_events"]) == [
        (T0, "gpu-node-07", "cordon", "unschedulable", "info"),
        (T0 + timedelta(seconds=90), "gpu-node-07", "os_kernel", "KernelDeadlock", "warning"),
        (T0 + timedelta(seconds=180), "gpu-node-07", "health_ok", "KernelDeadlock", "ok")]
    assert result.rejects.select("line_no", "reason").rows() == [(21, "value is NaN (no reading)")]
    assert (result.records, result.skipped) == (21, 17) and result.format == "kube-state-metrics-json"
    assert not any(ksm.OTHER_SERIES in p for p in result.problems)


def _scrapes(states: list[dict], start: datetime, step: int = 30) -> str:
    """A scrape every ``step`` s, each after a collector's date line: {(node, condition): status}."""
    out = []
    for i, state in enumerate(states):
        out.append((start + timedelta(seconds=i * step)).strftime("%Y-%m-%dT%H:%M:%SZ"))
        for (node, condition), held in state.items():
            out += [f'kube_node_status_condition{{condition="{condition}",node="{node}",status="{s}"}} '
                    f'{int(s == held)}' for s in ("false", "true", "unknown")]
        out.append('kube_node_spec_unschedulable{node="gpu-node-01"} 0')
    return "\n".join(out) + "\n"


STEADY = {("gpu-node-01", "Ready"): "true", ("gpu-node-01", "KernelDeadlock"): "false",
          ("gpu-node-02", "Ready"): "true", ("gpu-node-02", "ReadonlyFilesystem"): "false",
          ("gpu-node-02", "CustomizedType"): "false"}


def _day(n: int = 200) -> list[dict]:
    """n scrapes; gpu-node-02 NotReady (unknown) for scrapes 50-52, read-only and a custom condition 100-149."""
    states = []
    for i in range(n):
        s = dict(STEADY)
        if 50 <= i < 53:
            s[("gpu-node-02", "Ready")] = "unknown"
        if 100 <= i < 150:
            s[("gpu-node-02", "ReadonlyFilesystem")] = "true"
            s[("gpu-node-02", "CustomizedType")] = "true"
        states.append(s)
    return states


def test_steady_state_makes_no_event_and_pieces_keep_their_state(tmp_path):
    """200 scrapes of 5 conditions (3,400 lines): 6 events, at the changes; read in two pieces, the same."""
    text = _scrapes(_day(), T0)
    path = tmp_path / "ksm-scrapes.prom"
    path.write_text(text + "kube_node_status_condition{garbled\n"
                    'kube_node_status_condition{condition="Ready",status="true"} 1\n')
    result, counts = parse_file(node_health.parse, path, "node_health")
    at = lambda i: T0 + timedelta(seconds=30 * i)  # noqa: E731
    want = [(at(50), "gpu-node-02", "node_not_ready", "Ready", "critical"),
            (at(53), "gpu-node-02", "health_ok", "Ready", "ok"),
            (at(100), "gpu-node-02", "node_condition", "CustomizedType", "warning"),
            (at(100), "gpu-node-02", "filesystem", "ReadonlyFilesystem", "warning"),
            (at(150), "gpu-node-02", "health_ok", "CustomizedType", "ok"),
            (at(150), "gpu-node-02", "health_ok", "ReadonlyFilesystem", "ok")]
    assert _ev(result.tables["node_events"]) == want
    assert result.rejects["reason"].to_list() == [
        "not a metric line: expected 'name{labels} value [timestamp]', a # comment or a date line (cut off or "
        "garbled?)", "kube_node_status_condition without a node label"]
    assert counts.lines == 200 * 17 + 2 and counts.rows == 6 and counts.rejects == 2
    lines = pl.DataFrame({"line_no": range(1, 3401), "text": text.splitlines()})
    ctx = ParseContext(path=path, source="node_health", host_hint=None)
    pieces = list(node_health.stream_parts(iter([lines[:1700], lines[1700:]]), ctx))
    assert _ev(pl.concat([p.tables["node_events"] for p in pieces])) == want


def test_overlapping_files_count_a_change_once(tmp_path):
    """Three files over one morning, their windows overlapping and their samples 10 s apart: KernelDeadlock
    true from scrape 100 to 149 is one problem and one recovery, whichever file saw it, in one run (the batch's
    memory) or the next (the warehouse); the first sample of a file inside the problem adds nothing."""
    def state(i):
        s = {("gpu-node-01", "Ready"): "true", ("gpu-node-01", "KernelDeadlock"): "false"}
        if 100 <= i < 150:
            s[("gpu-node-01", "KernelDeadlock")] = "true"
        return s
    src = tmp_path / "src" / "node_health"
    src.mkdir(parents=True)
    (src / "ksm-a.prom").write_text(_scrapes([state(i) for i in range(0, 130)], T0))  # to inside the problem
    # from inside the problem, 10 s off the first file's samples
    (src / "ksm-b.prom").write_text(_scrapes([state(i) for i in range(120, 200)],
                                             T0 + timedelta(seconds=120 * 30 + 10)))
    con = warehouse.connect(tmp_path / "w.duckdb")
    assert {o.status for o in ingest_directory(con, tmp_path / "src", IngestOptions()).outcomes} == {"ok"}
    (src / "ksm-c.prom").write_text(_scrapes([state(i) for i in range(90, 160)], T0 + timedelta(seconds=90 * 30 + 20)))
    # and a range-query answer (the engine hands it to json_parts) over the same changes, 5 s off
    series = [{"metric": {"__name__": ksm.METRIC, "node": "gpu-node-01", "condition": "KernelDeadlock", "status": s},
               "values": [[(T0 - datetime(1970, 1, 1)).total_seconds() + 30 * i + 5, "1"] for i in range(95, 155)
                          if (100 <= i < 150) == (s == "true")]} for s in ("true", "false")]
    (src / "ksm-d.json").write_text(json.dumps({"status": "success", "data": {"resultType": "matrix",
                                                                               "result": series}}))
    second = ingest_directory(con, tmp_path / "src", IngestOptions()).outcomes
    assert sorted((o.path.rsplit("/", 1)[-1], o.status, o.rows) for o in second if o.status == "ok") == [
        ("ksm-c.prom", "ok", 0), ("ksm-d.json", "ok", 0)]
    got = con.execute("SELECT kind, code, event_time, file FROM node_events ORDER BY event_time").fetchall()
    con.close()
    assert [(k, c, f.rsplit("/", 1)[-1]) for k, c, _, f in got] == [
        ("os_kernel", "KernelDeadlock", "ksm-a.prom"), ("health_ok", "KernelDeadlock", "ksm-b.prom")]


def test_json_lines_through_json_parts_read_as_before(tmp_path):
    """A node-health file of JSON lines starts with '{' too: the engine hands it to json_parts, which reads it line
    by line as parse does (a line over max_line_bytes refused as the line reader refuses it)."""
    text = (FIXTURES / "nvsentinel_adr049.jsonl").read_text()
    path = tmp_path / "events.jsonl"
    longest = max(len(line.encode()) for line in text.splitlines())
    path.write_text(text + '{"nodeName": "x", "message": "' + "a" * longest + '"}\n')
    opts = IngestOptions(max_line_bytes=longest + 1)
    ctx = ParseContext(path=path, source="node_health", host_hint=None, options=opts)
    got = combine(node_health.json_parts(iter([path.read_bytes()]), ctx))
    want, _ = parse_file(node_health.parse, FIXTURES / "nvsentinel_adr049.jsonl", "node_health")
    assert got.tables["node_events"].equals(want.tables["node_events"])
    n = len(text.splitlines())
    assert got.records == n + 1 and got.rejects["line_no"].to_list() == [*want.rejects["line_no"], n + 1]


def test_classified_not_ready_blames_the_node_custom_conditions_nothing(tmp_path):
    """NotReady: an infrastructure failure of unknown cause (nh-node-not-ready); KernelDeadlock, ReadonlyFilesystem,
    MemoryPressure: the causes npd's Events of those names get; an unknown condition, a recovery, a cordon and an
    uncordon (kube_node_spec_unschedulable: node states, not faults): nothing."""
    con = warehouse.connect(tmp_path / "w.duckdb")
    ev = lambda host, kind, code, severity: {  # noqa: E731
        "event_time": T0, "host": host, "source": "node_health", "kind": kind, "code": code, "severity": severity,
        "message": "m", "device": None, "reporter": "kube-state-metrics", "file": "f", "line_no": 1}
    _events(con, [ev("a", "node_not_ready", "Ready", "critical"),
                  ev("b", "node_condition", "CustomizedType", "warning"),
                  ev("c", "filesystem", "ReadonlyFilesystem", "warning"),
                  ev("d", "os_kernel", "KernelDeadlock", "warning"),
                  ev("e", "health_ok", "Ready", "ok"), ev("f", "oom", "MemoryPressure", "warning"),
                  ev("g", "cordon", "unschedulable", "info"), ev("h", "uncordon", "unschedulable", "info")])
    attribution.classify_events(con, load())
    got = {h: (c, s, r) for h, c, s, r in con.execute(
        "SELECT host, cause, severity, rule FROM classified_events").fetchall()}
    con.close()
    assert got == {"a": ("unattributed", "warning", "nh-node-not-ready"),
                   "c": ("filesystem_mount", "warning", "nh-filesystem-warning"),
                   "d": ("os_kernel", "warning", "nh-os-kernel-warning"), "f": ("oom", "warning", "nh-oom")}
