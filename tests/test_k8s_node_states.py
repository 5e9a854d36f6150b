"""Kubernetes node states (sql/schema/k8s_objects.sql's k8s_node_states, part of node_states): cordons from the
kubelet's Node Events, their reasons from NVSentinel's quarantineHealthEvent annotation on the Node objects, on
hand-written real-shaped examples (tests/fixtures/kubernetes/SOURCES.md); and the simulator's Kubernetes world,
whose node_states must be the Slurm world's drains."""
from __future__ import annotations

from datetime import datetime, timedelta
from pathlib import Path

import pytest

from analysis import warehouse
from analysis.ingest.engine import ingest_directory
from analysis.simulate.config import preset
from analysis.simulate.run import simulate

FIXTURES = Path(__file__).parent / "fixtures" / "kubernetes"
STATES = "SELECT host, time_start, time_end, state, reason FROM node_states ORDER BY host, time_start"


def _warehouse(tmp_path: Path, names: list[str]):
    folder = tmp_path / "src" / "kubernetes"
    folder.mkdir(parents=True)
    for name in names:
        (folder / name).write_text((FIXTURES / name).read_text())
    con = warehouse.connect(tmp_path / "w.duckdb")
    ingest_directory(con, tmp_path / "src")
    return con


def test_cordons_from_kubelet_events_with_nvsentinel_reasons(tmp_path):
    con = _warehouse(tmp_path, ["node_events.jsonl", "nodes_list.json"])
    t = datetime
    assert con.execute(STATES).fetchall() == [
        # cordoned again while cordoned (a kubelet restart) is one period; the newest HealthEvent at or before the
        # cordon names it: the XID event generated after it does not
        ("gpu-a", t(2025, 6, 2, 10, 0, 5), t(2025, 6, 2, 12, 5), "DRAIN",
         "healthcheck: GpuNvlinkWatch: GPU NvLink link is currently down"),
        ("gpu-b", t(2025, 6, 2, 9), None, "DRAIN", "cordoned"),  # still cordoned; by hand: no annotation
        ("gpu-c", t(2025, 6, 2, 8), t(2025, 6, 2, 8, 30, 12), "DOWN", "NodeNotReady"),  # an uncordon alone: nothing
        # the Event seen again (count 2) is a second cordon at its lastTimestamp; the annotation (one HealthEvent,
        # protojson time) is a day too late for the first
        ("gpu-d", t(2025, 6, 1, 6), t(2025, 6, 1, 7, 15), "DRAIN", "cordoned"),
        ("gpu-d", t(2025, 6, 2, 9, 40), None, "DRAIN", "healthcheck: GpuMemWatch: Uncorrectable ECC error on GPU 5"),
    ]
    # the report's out-of-service card reads them like Slurm's
    assert con.execute("SELECT host, reason FROM nodes_out_of_service(DATE '2025-06-02') ORDER BY host").fetchall() == [
        ("gpu-b", "cordoned"), ("gpu-d", "healthcheck: GpuMemWatch: Uncorrectable ECC error on GPU 5")]
    assert con.execute("SELECT file LIKE '%node_events.jsonl', line_no FROM node_states WHERE host = 'gpu-a'"
                       ).fetchall() == [(True, 1)]


def test_goodputs_own_cordon_is_known_by_its_annotations(tmp_path):
    """kubectl.sh cordons, then annotates the node with goodput's reason and the time (analysis/nodes/scripts.py):
    read back, the cordon's reason is goodput's, which the node lifecycle knows its own drains by."""
    import json

    from analysis.nodes.scripts import K8S_DRAINED_AT_ANNOTATION, K8S_REASON_ANNOTATION

    def event(reason, at, n):
        return {"metadata": {"name": f"gpu-e.{n}", "namespace": "default", "uid": f"e-{n}", "resourceVersion": str(n)},
                "reason": reason, "message": f"Node gpu-e status is now: {reason}", "type": "Normal", "count": 1,
                "source": {"component": "kubelet", "host": "gpu-e"}, "firstTimestamp": at, "lastTimestamp": at,
                "involvedObject": {"kind": "Node", "name": "gpu-e", "uid": "gpu-e", "apiVersion": "v1"}}

    node = {"type": "MODIFIED", "object": {"apiVersion": "v1", "kind": "Node", "metadata": {
        "name": "gpu-e", "uid": "gpu-e", "resourceVersion": "900", "annotations": {
            K8S_REASON_ANNOTATION: "goodput: drain_now gpu_memory score=1.00",
            K8S_DRAINED_AT_ANNOTATION: "2025-06-03T04:00:02Z"}}, "spec": {"unschedulable": True}}}
    folder = tmp_path / "src" / "kubernetes"
    folder.mkdir(parents=True)
    (folder / "events.jsonl").write_text("".join(json.dumps(e) + "\n" for e in [
        event("NodeNotSchedulable", "2025-06-01T04:00:00Z", 1), event("NodeSchedulable", "2025-06-01T05:00:00Z", 2),
        event("NodeNotSchedulable", "2025-06-03T04:00:01Z", 3)]))
    (folder / "nodes.jsonl").write_text(json.dumps(node) + "\n")
    con = warehouse.connect(tmp_path / "w.duckdb")
    ingest_directory(con, tmp_path / "src")
    # the earlier cordon, two days before goodput's annotation, is someone else's
    assert con.execute(STATES).fetchall() == [
        ("gpu-e", datetime(2025, 6, 1, 4), datetime(2025, 6, 1, 5), "DRAIN", "cordoned"),
        ("gpu-e", datetime(2025, 6, 3, 4, 0, 1), None, "DRAIN", "goodput: drain_now gpu_memory score=1.00")]


def test_without_node_objects_every_cordon_is_plain(tmp_path):
    con = _warehouse(tmp_path, ["node_events.jsonl"])
    assert {r[4] for r in con.execute(STATES).fetchall()} == {"cordoned", "NodeNotReady"}


def _merged(rows):
    """A node is cordoned or not: Slurm's overlapping drains of a node (a second fault while drained) as one."""
    out = []
    for host, start, end, state, reason in rows:
        last = out[-1] if out else None
        if last and last[0] == host and last[3] == state and (last[2] is None or start <= last[2]):
            out[-1] = (host, last[1], None if end is None or last[2] is None else max(end, last[2]), state, last[4])
        else:
            out.append((host, start, end, state, reason))
    return out


@pytest.fixture(scope="module")
def worlds(tmp_path_factory):
    root = tmp_path_factory.mktemp("cordons")
    got = {}
    for scheduler, folder in (("slurm", "slurm_events"), ("kubernetes", "kubernetes")):
        simulate(preset("small", nodes=32, days=6, seed=5, scheduler=scheduler), root / scheduler)
        (root / f"{scheduler}-states").mkdir()
        (root / scheduler / folder).rename(root / f"{scheduler}-states" / folder)  # only what node_states reads
        con = warehouse.connect(root / f"{scheduler}.duckdb")
        ingest_directory(con, root / f"{scheduler}-states")
        got[scheduler] = con.execute(STATES).fetchall()
        con.close()
    return got


def test_the_kubernetes_world_has_the_slurm_worlds_drains(worlds):
    slurm, k8s = _merged(worlds["slurm"]), worlds["kubernetes"]
    assert len(slurm) < len(worlds["slurm"])  # this seed has a node drained twice over
    assert [r[:4] for r in k8s] == [r[:4] for r in slurm]
    for (*_, state, reason), (*_, slurm_reason) in zip(k8s, slurm):
        # a health check's drain is NVSentinel's cordon, named as Slurm named it; maintenance is a cordon by hand;
        # a node that stopped answering is NotReady, whatever check Slurm's record names
        assert reason == ("NodeNotReady" if state == "DOWN" else
                          slurm_reason if slurm_reason.startswith("healthcheck:") else "cordoned")
    assert ("gpu0028", "healthcheck: gpu_count: expected 8 GPUs, found 7") in {(r[0], r[4]) for r in k8s}


def _unschedulable(values: dict[str, list[tuple[datetime, int]]]) -> str:
    """A Prometheus range-query answer of kube_node_spec_unschedulable: {node: [(time, value)]}."""
    import json

    epoch = datetime(1970, 1, 1)
    return json.dumps({"status": "success", "data": {"resultType": "matrix", "result": [
        {"metric": {"__name__": "kube_node_spec_unschedulable", "node": node, "job": "kube-state-metrics"},
         "values": [[(t - epoch).total_seconds(), str(v)] for t, v in samples]} for node, samples in values.items()]}})


def test_cordons_from_kube_state_metrics_alone_and_beside_the_kubelets_events(tmp_path):
    """kube_node_spec_unschedulable scraped every 30 s: gpu-m cordoned from 10:01 to 10:30:30 (one DRAIN, read
    twice: a second answer from inside the cordon, 10 s off, read in the next run, adds nothing), gpu-o cordoned
    at 10:02 and still at the end (open); gpu-e's cordon also has the kubelet's Events, the metric's changes 25 s
    and 20 s after them: one period, the Events' times."""
    import json

    t0 = datetime(2025, 6, 4, 10)
    at = lambda s: t0 + timedelta(seconds=s)  # noqa: E731
    ticks = range(0, 3600, 30)
    nodes = {"gpu-m": [(at(s), int(60 <= s < 1830)) for s in ticks], "gpu-o": [(at(s), int(s >= 120)) for s in ticks],
             "gpu-e": [(at(s), int(30 <= s < 1230)) for s in ticks]}
    src = tmp_path / "src"
    (src / "node_health").mkdir(parents=True)
    (src / "node_health" / "ksm-a.json").write_text(_unschedulable(nodes))
    (src / "kubernetes").mkdir()

    def event(reason, when, n):
        stamp = when.strftime("%Y-%m-%dT%H:%M:%SZ")
        return {"metadata": {"name": f"gpu-e.{n}", "namespace": "default", "uid": f"e-{n}", "resourceVersion": str(n)},
                "reason": reason, "message": f"Node gpu-e status is now: {reason}", "type": "Normal", "count": 1,
                "source": {"component": "kubelet", "host": "gpu-e"}, "firstTimestamp": stamp, "lastTimestamp": stamp,
                "involvedObject": {"kind": "Node", "name": "gpu-e", "uid": "gpu-e", "apiVersion": "v1"}}
    (src / "kubernetes" / "events.jsonl").write_text("".join(json.dumps(e) + "\n" for e in [
        event("NodeNotSchedulable", at(5), 1), event("NodeSchedulable", at(1210), 2)]))
    con = warehouse.connect(tmp_path / "w.duckdb")
    ingest_directory(con, src)
    (src / "node_health" / "ksm-b.json").write_text(_unschedulable(
        {"gpu-m": [(t + timedelta(seconds=10), v) for t, v in nodes["gpu-m"] if t >= at(900)]}))
    assert [o.rows for o in ingest_directory(con, src).outcomes if o.path.endswith("ksm-b.json")] == [0]
    assert con.execute("SELECT host, kind, count(*) FROM node_events GROUP BY ALL ORDER BY ALL").fetchall() == [
        ("gpu-e", "cordon", 1), ("gpu-e", "uncordon", 1), ("gpu-m", "cordon", 1), ("gpu-m", "uncordon", 1),
        ("gpu-o", "cordon", 1)]
    assert con.execute(STATES).fetchall() == [
        ("gpu-e", at(5), at(1210), "DRAIN", "cordoned"),
        ("gpu-m", at(60), at(1830), "DRAIN", "cordoned"),
        ("gpu-o", at(120), None, "DRAIN", "cordoned")]
    began = con.execute("SELECT host, file FROM node_states ORDER BY host").fetchall()
    said = dict(con.execute("SELECT kind, message FROM node_events WHERE host = 'gpu-m'").fetchall())
    con.close()
    assert said["cordon"].startswith("node cordoned [kube_node_spec_unschedulable 1; was schedulable at ")
    assert said["uncordon"].startswith("node uncordoned [kube_node_spec_unschedulable 0; was cordoned at ")
    assert [(h, f.rsplit("/", 1)[-1]) for h, f in began] == [
        ("gpu-e", "events.jsonl"), ("gpu-m", "ksm-a.json"), ("gpu-o", "ksm-a.json")]
