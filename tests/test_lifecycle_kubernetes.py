"""The node lifecycle on a Kubernetes cluster, from files alone: the kubelet's cordon Events, Node objects with
goodput's drain annotations (kubectl.sh's), NVSentinel health events and repair tickets walk gpu-a through
drained -> in repair -> awaiting validation -> validated -> resumed, as tests/test_lifecycle.py does on Slurm;
gpu-b, cordoned by goodput and validated by NVSentinel's recovery, is offered back to kubectl.sh; gpu-c,
cordoned by a person, never is."""
from __future__ import annotations

import json
from datetime import datetime

import duckdb
import pytest
from click.testing import CliRunner

from analysis.nodes.scripts import K8S_DRAINED_AT_ANNOTATION, K8S_REASON_ANNOTATION
from pipelines.cli import main
from tests.test_lifecycle import now_and_resume

REASON = "goodput: drain_now gpu_memory score=1.00"
CORDONS = [  # host, cordoned, uncordoned (None: still), by goodput
    ("gpu-a", "2024-03-02T10:00:00Z", "2024-03-05T12:00:00Z", True),
    ("gpu-b", "2024-03-08T08:00:00Z", None, True),
    ("gpu-c", "2024-03-08T08:00:00Z", None, False),
]
TICKETS = [("T-1", "gpu-a", "2024-03-02T11:00:00", "2024-03-04T09:00:00", "GPU", "replaced GPU 2"),
           ("T-2", "gpu-b", "2024-03-08T09:00:00", "2024-03-09T10:00:00", "GPU", "reseated GPU 5"),
           ("T-3", "gpu-c", "2024-03-08T09:00:00", "2024-03-09T10:00:00", "fan", "replaced fan 3")]
RECOVERED = [("gpu-a", "2024-03-04T10:00:00Z"), ("gpu-b", "2024-03-09T12:00:00Z"), ("gpu-c", "2024-03-09T12:00:00Z")]


def _event(host: str, reason: str, at: str, n: int) -> dict:
    """A kubelet Event about a Node as resmoio/kubernetes-event-exporter writes it (tests/fixtures/kubernetes)."""
    return {"metadata": {"name": f"{host}.{n}", "namespace": "default", "uid": f"ev-{host}-{n}",
                         "resourceVersion": str(n)},
            "reason": reason, "message": f"Node {host} status is now: {reason}", "type": "Normal", "count": 1,
            "source": {"component": "kubelet", "host": host}, "firstTimestamp": at, "lastTimestamp": at,
            "involvedObject": {"kind": "Node", "name": host, "uid": host, "apiVersion": "v1"}}


def _node(host: str, at: str, rv: int) -> dict:
    """The Node as a watch saw it after kubectl.sh cordoned it: goodput's taint and annotations."""
    return {"type": "MODIFIED", "object": {"apiVersion": "v1", "kind": "Node", "metadata": {
        "name": host, "uid": f"node-{host}", "resourceVersion": str(rv),
        "annotations": {K8S_REASON_ANNOTATION: REASON, K8S_DRAINED_AT_ANNOTATION: at.replace(":00Z", ":02Z")}},
        "spec": {"unschedulable": True, "taints": [{"key": "goodput.io/drain", "value": "drain_now",
                                                    "effect": "NoSchedule"}]}}}


def _pod(day: int) -> dict:
    """One training pod a day on gpu-z (the jobs: a cluster with no job has no report)."""
    at = lambda h: f"2024-03-{day:02d}T{h:02d}:00:00Z"  # noqa: E731
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {
        "name": f"train-{day}", "namespace": "llm", "uid": f"pod-{day}", "resourceVersion": str(1000 + day),
        "creationTimestamp": at(0), "labels": {"app.kubernetes.io/name": "train"}},
        "spec": {"nodeName": "gpu-z", "containers": [{"name": "trainer", "resources": {
            "limits": {"nvidia.com/gpu": "8"}}}]},
        "status": {"phase": "Succeeded", "startTime": at(0), "containerStatuses": [{
            "name": "trainer", "restartCount": 0, "state": {"terminated": {
                "exitCode": 0, "reason": "Completed", "startedAt": at(0), "finishedAt": at(6)}}}]}}


def _health(host: str, at: str, healthy: bool) -> dict:
    return {"nodeName": host, "generatedTimestamp": at, "agent": "gpu-health-monitor", "componentClass": "GPU",
            "checkName": "GpuMemWatch", "isFatal": not healthy, "isHealthy": healthy,
            "message": "GPU memory healthy" if healthy else "Uncorrectable ECC error on GPU 2",
            "recommendedAction": "NONE" if healthy else "RESTART_BM", "errorCode": [] if healthy else ["DCGM_FR_ECC"]}


def _source(root):
    (root / "kubernetes").mkdir(parents=True)
    events, nodes, n = [], [], 0
    for host, cordoned, uncordoned, by_goodput in CORDONS:
        n += 1
        events.append(_event(host, "NodeNotSchedulable", cordoned, n))
        if uncordoned:
            n += 1
            events.append(_event(host, "NodeSchedulable", uncordoned, n))
        if by_goodput:
            nodes.append(_node(host, cordoned, 500 + n))
    lines = [*events, *nodes, *(_pod(d) for d in range(1, 13))]
    (root / "kubernetes" / "watch.jsonl").write_text("".join(json.dumps(o) + "\n" for o in lines))
    (root / "node_health").mkdir()
    faults = [_health(h, c.replace(":00:00Z", ":59:00Z").replace("T10", "T09").replace("T08", "T07"), False)
              for h, c, _, _ in CORDONS]
    (root / "node_health" / "nvsentinel.jsonl").write_text(
        "".join(json.dumps(e) + "\n" for e in [*faults, *(_health(h, t, True) for h, t in RECOVERED)]))
    (root / "tickets").mkdir()
    (root / "tickets" / "tickets.csv").write_text(
        "ticket_id,host,opened,closed,component,resolution\n" + "".join(",".join(t) + "\n" for t in TICKETS))


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    root = tmp_path_factory.mktemp("lifecycle_k8s")
    _source(root / "src")
    db = root / "w.duckdb"
    result = CliRunner().invoke(main, ["run", "--source", str(root / "src"), "--db", str(db),
                                       "--out", str(root / "out"), "-q"])
    assert result.exit_code in (0, 3), result.output  # degraded at most: a small cluster, few sources
    return db


def test_drain_ticket_validation_resume_on_kubernetes(run):
    con = duckdb.connect(str(run), read_only=True)
    try:
        states = con.execute("SELECT host, time_start, time_end, reason FROM node_states ORDER BY host").fetchall()
        steps = con.execute("SELECT step_time, state, evidence FROM node_lifecycle WHERE host = 'gpu-a' "
                            "AND source <> 'goodput' ORDER BY step").fetchall()
    finally:
        con.close()
    assert states == [("gpu-a", datetime(2024, 3, 2, 10), datetime(2024, 3, 5, 12), REASON),
                      ("gpu-b", datetime(2024, 3, 8, 8), None, REASON),
                      ("gpu-c", datetime(2024, 3, 8, 8), None, "cordoned")]
    assert [s for _, s, _ in steps] == ["drained", "in_repair", "awaiting_validation", "validated", "resumed"], steps
    said = {s: e for _, s, e in steps}
    assert said["drained"].startswith("drained by goodput: drain_now gpu_memory")
    assert said["validated"] == "health agent check GpuMemWatch recovered"


def test_only_goodputs_validated_cordon_is_offered_back(run):
    now, resume = now_and_resume(run, ("gpu-b", "gpu-c"))
    assert now == {"gpu-b": "validated", "gpu-c": "validated"}
    assert resume["host"].to_list() == ["gpu-b"]
