"""kubernetes/: kubectl -o json snapshots, watch output and event-exporter lines into k8s_objects (one row per object
state), from the examples in tests/fixtures/kubernetes/ (SOURCES.md says where each comes from)."""
import gzip
import json
import os
import random
from datetime import datetime
from pathlib import Path

import polars as pl
import pytest

from analysis import warehouse
from analysis.ingest.check import as_text, check_directory
from analysis.ingest.engine import ingest_directory
from analysis.ingest.parsers import kubernetes
from tests.test_fuzz import _mutate

FIXTURES = Path(__file__).parent / "fixtures" / "kubernetes"
SNAPSHOT = datetime(2024, 3, 21, 16, 30)  # the files' mtime: observed_at


def _source(tmp_path: Path, files: dict[str, str | bytes], when: datetime = SNAPSHOT) -> Path:
    folder = tmp_path / "src" / "kubernetes"
    folder.mkdir(parents=True, exist_ok=True)
    for name, text in files.items():
        path = folder / name
        path.write_bytes(text if isinstance(text, bytes) else text.encode())
        stamp = when.timestamp() - datetime.now().astimezone().utcoffset().total_seconds()
        os.utime(path, (stamp, stamp))
    return tmp_path / "src"


def _ingest(tmp_path: Path, files: dict[str, str | bytes] | None = None, when: datetime = SNAPSHOT):
    src = _source(tmp_path, files, when) if files else tmp_path / "src"
    con = warehouse.connect(tmp_path / "w.duckdb")
    summary = ingest_directory(con, src)
    assert all(o.status in ("ok", "unchanged", "duplicate") for o in summary.outcomes), summary.outcomes
    return con, summary


def _rows(con, where: str = "true") -> list[dict]:
    return con.sql(f"SELECT * EXCLUDE (raw) FROM k8s_objects WHERE {where} ORDER BY file, line_no").pl().to_dicts()


def _fixture(name: str) -> str:
    return (FIXTURES / name).read_text()


def test_pods_with_disruption_target_and_oomkilled(tmp_path):
    con, summary = _ingest(tmp_path, {"pods.json": _fixture("pods_list.json")})
    assert [(o.lines, o.rows, o.rejects) for o in summary.outcomes] == [(2, 2, 0)]  # a List's items are its records
    oom, taint = _rows(con)
    assert (oom["line_no"], oom["kind"], oom["namespace"], oom["node_name"], oom["gpus"]) == (
        1, "Pod", "team-a", "gpu-node-17", 8)  # the sidecar asks for no GPU
    # the failed container wins over the one that completed: the OOMKilled lastState, verbatim from the docs
    assert (oom["exit_code"], oom["reason"], oom["finished_at"]) == (137, "OOMKilled", datetime(2017, 6, 20, 20, 52, 19))
    assert (oom["disruption_reason"], oom["state"], oom["restarts"]) == ("PreemptionByScheduler", "Failed", 1)
    assert (oom["owner_kind"], oom["owner_name"]) == ("Job", "llama-pretrain-workers-0")
    assert json.loads(oom["labels"])["jobset.sigs.k8s.io/restart-attempt"] == "1"
    assert (oom["observed_at"], oom["created_at"], oom["deleted"]) == (SNAPSHOT, datetime(2024, 3, 21, 15, 40), False)
    assert (taint["exit_code"], taint["reason"], taint["disruption_reason"]) == (143, "Error", "DeletionByTaintManager")
    assert (taint["started_at"], taint["finished_at"]) == (datetime(2024, 3, 21, 15, 41, 20), datetime(2024, 3, 21, 15, 50, 30))
    assert json.loads(taint["conditions"])[0]["type"] == "DisruptionTarget"
    raw = con.execute("SELECT raw FROM k8s_objects WHERE line_no = 2").fetchall()[0][0]
    assert json.loads(raw)["metadata"]["name"] == "llama-pretrain-workers-0-1-m9q4d"  # for ad-hoc SQL


def test_workloads_kueue_jobset_job_pytorchjob(tmp_path):
    con, _ = _ingest(tmp_path, {"workloads.json": _fixture("workloads_list.json")})
    rows = {r["kind"]: r for r in _rows(con)}
    assert list(rows) == ["Workload", "JobSet", "Job", "PyTorchJob"]
    wl = rows["Workload"]  # Kueue: evicted by a preemption in its ClusterQueue, requeued 5 times, 6 evictions counted
    conditions = {c["type"]: c for c in json.loads(wl["conditions"])}
    assert (conditions["Evicted"]["status"], conditions["Evicted"]["reason"]) == ("True", "Preempted")
    assert (wl["state"], wl["reason"], wl["restarts"]) == ("Preempted", "InClusterQueue", 6)
    assert (wl["owner_kind"], wl["owner_name"]) == ("JobSet", "llama-pretrain")
    js = rows["JobSet"]  # restarted twice, failed on reaching maxRestarts
    assert (js["state"], js["reason"], js["restarts"], js["finished_at"]) == (
        "Failed", "ReachedMaxRestarts", 2, datetime(2024, 3, 21, 16, 20, 11))
    job = rows["Job"]
    assert (job["state"], job["reason"], job["started_at"], job["finished_at"]) == (
        "Failed", "BackoffLimitExceeded", datetime(2024, 3, 21, 15, 41), datetime(2024, 3, 21, 15, 50, 33))
    assert json.loads(job["labels"])["jobset.sigs.k8s.io/restart-attempt"] == "1"
    ptj = rows["PyTorchJob"]  # restarting after a worker failed: its restarts are its Restarting conditions
    assert (ptj["state"], ptj["reason"], ptj["namespace"], ptj["finished_at"]) == (
        "Restarting", "PyTorchJobRestarting", "team-b", None)
    assert ptj["started_at"] == datetime(2024, 3, 22, 8, 0, 5)


def test_event_exporter_lines(tmp_path):
    con, summary = _ingest(tmp_path, {"events.jsonl": _fixture("events.jsonl")})
    assert [(o.lines, o.rows, o.rejects) for o in summary.outcomes] == [(3, 3, 0)]
    rows = _rows(con)
    assert [r["kind"] for r in rows] == ["Event"] * 3  # the exporter drops kind: an involvedObject makes an Event
    ev = rows[1]
    assert (ev["involved_kind"], ev["involved_name"], ev["reason"], ev["event_type"], ev["count"]) == (
        "Workload", "jobset-llama-pretrain-3c1a2", "EvictedDueToPreempted", "Normal", 2)
    assert (ev["started_at"], ev["finished_at"], ev["source_component"]) == (
        datetime(2024, 3, 21, 15, 49, 55), datetime(2024, 3, 21, 16, 5, 10), "kueue-admission")
    assert rows[2]["involved_uid"] == "6b1f0c1e-1111-4a8e-9c51-000000000002"
    assert con.execute("SELECT count(*) FROM k8s_latest WHERE kind = 'Event'").fetchall() == [(0,)]


def _items() -> list[dict]:
    return json.loads(_fixture("pods_list.json"))["items"] + json.loads(_fixture("workloads_list.json"))["items"]


COMPARED = ["kind", "name", "uid", "resource_version", "owner_uid", "labels", "node_name", "gpus", "state", "started_at",
            "finished_at", "exit_code", "reason", "disruption_reason", "conditions", "restarts", "observed_at"]


def test_a_list_json_lines_and_watch_events_give_the_same_rows(tmp_path):
    items = _items()
    shapes = {
        "a_pretty.json": json.dumps({"apiVersion": "v1", "kind": "List", "items": items, "metadata": {}}, indent=4),
        "b_compact.json": json.dumps({"kind": "List", "apiVersion": "v1", "items": items}),
        "c_lines.jsonl": "\n".join(json.dumps(i) for i in items) + "\n",
        "d_watch.jsonl": "\r\n".join(json.dumps({"type": "ADDED", "object": i}) for i in items),  # CRLF, no last newline
        "e_watch_pretty.json": "\n".join(json.dumps(i, indent=4) for i in items),  # kubectl get -w -o json
    }
    got = {}
    for name, text in shapes.items():
        con, summary = _ingest(tmp_path / name, {name: text})
        assert [(o.lines, o.rows, o.rejects) for o in summary.outcomes] == [(6, 6, 0)], name
        rows = con.sql("SELECT * FROM k8s_objects ORDER BY line_no").pl()
        assert rows["line_no"].to_list() == list(range(1, 7)), name
        got[name] = rows.select(COMPARED)
    for name, rows in got.items():
        assert rows.equals(got["a_pretty.json"]), name


def test_watch_events_bookmarks_and_rejects(tmp_path):
    con, summary = _ingest(tmp_path, {"watch.jsonl": _fixture("watch.jsonl")})
    (o,) = summary.outcomes
    assert (o.lines, o.rows, o.rejects) == (11, 4, 5) and "1 watch BOOKMARK event(s), no object state: skipped" in o.message
    rows = _rows(con)
    assert [(r["line_no"], r["kind"], r["resource_version"], r["deleted"]) for r in rows] == [
        (1, "Job", "90100", False), (2, "Job", "90300", False), (5, "Job", "90400", True), (11, "ConfigMap", "5", False)]
    assert rows[3]["state"] is None  # a kind without status: stored with the generic columns
    rejects = dict(con.execute("SELECT line_no, reason FROM rejects ORDER BY line_no").fetchall())
    assert sorted(rejects) == [6, 7, 8, 9, 10]
    assert rejects[6].startswith("not JSON") and "410" not in rejects[6]
    assert "watch ERROR" in rejects[7] and "too old resource version" in rejects[7]
    assert "without metadata.uid" in rejects[8] and 'without "kind"' in rejects[9] and "array" in rejects[10]
    latest = con.execute("SELECT kind, resource_version, deleted FROM k8s_latest ORDER BY kind").fetchall()
    assert latest == [("ConfigMap", "5", False), ("Job", "90400", True)]  # the Job's last state: deleted


def _changed_pods() -> str:
    pods = json.loads(_fixture("pods_list.json"))
    pods["items"][1]["metadata"]["resourceVersion"] = "88200"  # the second pod changed: its node was drained
    pods["items"][1]["status"]["conditions"][0]["reason"] = "EvictionByEvictionAPI"
    return json.dumps(pods, indent=4)


@pytest.mark.parametrize("runs", [1, 2])
def test_a_snapshot_taken_twice_adds_nothing_and_a_changed_object_adds_a_row(tmp_path, runs):
    """Two snapshots read in one run (the second's repeats known from the batch) or in two (from the warehouse)."""
    first = {"snap-1600.json": _fixture("pods_list.json")}
    later = {"snap-1700.json": _fixture("pods_list.json").replace('"resourceVersion": ""', '"resourceVersion": "9"'),
             "snap-1800.json": _changed_pods()}
    if runs == 1:
        con, summary = _ingest(tmp_path, {**first, **later})
    else:
        _ingest(tmp_path, first)[0].close()
        con, summary = _ingest(tmp_path, later, when=datetime(2024, 3, 21, 18))
    outcomes = {Path(o.path).name: o for o in summary.outcomes}
    assert (outcomes["snap-1700.json"].rows, outcomes["snap-1800.json"].rows) == (0, 1)
    assert "2 record(s) repeat an object state already stored" in outcomes["snap-1700.json"].message
    assert "1 record(s) repeat" in outcomes["snap-1800.json"].message
    assert con.execute("SELECT count(*) FROM k8s_objects").fetchall() == [(3,)]
    files = con.execute("SELECT path, lines, rows, skipped FROM ingested_files ORDER BY path").fetchall()
    assert [f[1:] for f in files] == [(2, 2, 0), (2, 0, 2), (2, 1, 1)]  # every record accounted for
    latest = con.execute("SELECT resource_version, disruption_reason FROM k8s_latest WHERE kind = 'Pod' "
                         "ORDER BY name").fetchall()
    assert latest == [("88121", "PreemptionByScheduler"), ("88200", "EvictionByEvictionAPI")]
    # reading the directory again adds nothing; a file read again (forced) stores what it stored before
    again = ingest_directory(con, tmp_path / "src")
    assert {o.status for o in again.outcomes} == {"unchanged"}
    _source(tmp_path, {"snap-1800.json": _changed_pods() + "\n"}, when=datetime(2024, 3, 21, 18, 1))
    ingest_directory(con, tmp_path / "src")
    assert con.execute("SELECT count(*), count(DISTINCT (uid, resource_version)) FROM k8s_objects").fetchall() == [(3, 3)]


def test_the_same_state_twice_in_one_file_is_stored_once(tmp_path):
    line = json.dumps(_items()[0])
    con, summary = _ingest(tmp_path, {"w.jsonl": f"{line}\n{line}\n"})
    assert (summary.outcomes[0].rows, summary.outcomes[0].lines) == (1, 2)
    assert "1 record(s) repeat" in summary.outcomes[0].message


def test_a_large_document_is_read_in_blocks(tmp_path, monkeypatch):
    """Blocks of a few items: the numbering and the rows are those of the document read whole."""
    items = []
    for n in range(40):
        for item in _items():
            item = json.loads(json.dumps(item))
            item["metadata"]["uid"] += f"-{n}"
            items.append(item)
    text = json.dumps({"apiVersion": "v1", "items": items, "kind": "List"}, indent=2)
    whole, _ = _ingest(tmp_path / "whole", {"big.json": text})
    monkeypatch.setattr(kubernetes, "BLOCK_CHARS", 20_000)
    blocks, summary = _ingest(tmp_path / "blocks", {"big.json.gz": gzip.compress(text.encode())})
    assert (summary.outcomes[0].lines, summary.outcomes[0].rows) == (240, 240)
    query = "SELECT * EXCLUDE (file) FROM k8s_objects ORDER BY line_no"
    assert blocks.sql(query).pl().equals(whole.sql(query).pl())


def test_a_document_cut_off_keeps_the_items_before_the_break(tmp_path):
    text = _fixture("workloads_list.json")
    con, summary = _ingest(tmp_path, {"cut.json": text[:int(len(text) * 0.6)]})
    (o,) = summary.outcomes
    assert (o.rows, o.rejects, o.lines) == (2, 1, 3)
    (reason,) = con.execute("SELECT reason FROM rejects").fetchall()[0]
    assert "the document stops being JSON" in reason and "the rest is not read" in reason


def test_a_file_that_is_not_kubernetes_json_is_unrecognised(tmp_path):
    src = _source(tmp_path, {"notes.txt": "kubectl get pods\nNAME READY STATUS\n", "array.json": "[1, 2]\n"})
    con = warehouse.connect(tmp_path / "w.duckdb")
    outcomes = {Path(o.path).name: o for o in ingest_directory(con, src).outcomes}
    assert {n: o.status for n, o in outcomes.items()} == {"notes.txt": "unrecognised", "array.json": "unrecognised"}
    assert "not Kubernetes JSON" in outcomes["notes.txt"].message


def test_goodput_check_names_the_kubernetes_folder(tmp_path):
    src = _source(tmp_path, {"pods.json": _fixture("pods_list.json"), "watch.jsonl": _fixture("watch.jsonl")})
    checks, _ = check_directory(src)
    (k8s,) = [c for c in checks if c.folder == "kubernetes"]
    assert (k8s.files, k8s.rows, k8s.rejects) == (2, 6, 5)
    assert sorted(k8s.formats) == ["kubernetes-jsonl", "kubernetes-list"]
    text = as_text(checks)
    assert "kubernetes/" in text and "e.g. kind=Pod" in text and "watch ERROR" in text


def test_fixture_sources_are_documented():
    sources = (FIXTURES / "SOURCES.md").read_text()
    for path in FIXTURES.iterdir():
        if path.name != "SOURCES.md":
            assert path.name in sources, path.name


@pytest.mark.parametrize("seed", [1, 2])
def test_mutated_json_lines_read_as_a_stream_are_all_accounted_for(tmp_path, seed):
    """tests/test_fuzz.py mutates the lines handed to parse(); a file starting with `{` is read by json_parts."""
    rng = random.Random(seed)
    seeds = _fixture("watch.jsonl").splitlines() + _fixture("events.jsonl").splitlines()
    lines = [seeds[0]] + [_mutate(rng, rng.choice(seeds)) for _ in range(2000)]
    con, summary = _ingest(tmp_path, {"watch.jsonl": "\n".join(lines) + "\n"})  # the engine checks the accounting
    (o,) = summary.outcomes
    assert o.status == "ok" and o.lines == 2001 and 0 < o.rows < o.lines and o.rejects > 0
