"""Jobs from Kubernetes workloads (sql/derive/stage_k8s_jobs.sql): a JobSet's restart attempts as instances, the
states the pods' DisruptionTarget, their containers and Kueue record, snapshots read again or changed, and a
`goodput run` that blames a failed attempt on an NVSentinel XID as it blames a Slurm NODE_FAIL."""
import json
import shutil
from datetime import datetime
from pathlib import Path

import duckdb
from click.testing import CliRunner

from analysis.derive.jobs import build_jobs
from analysis.nodes import lemons
from pipelines.cli import main
from pipelines.runner import EXIT_OK
from tests.test_kubernetes_parser import _fixture, _ingest, _source
from tests.test_node_health_parser import SACCT

NODE_HEALTH = Path(__file__).parent / "fixtures" / "node_health"
COLUMNS = ("job_id, instance, user_name, job_name, partition, state, exit_code, exit_signal, reason, submit_time, "
           "start_time, end_time, elapsed_s, n_nodes, n_gpus, nodes, restarts")


def _t(text: str) -> str:
    return f"2025-01-15T{text}Z"


def _pod(name, node, *, labels=None, owner=None, ns="team-a", gpus=8, phase="Succeeded", created="08:00:00",
         started="08:00:10", finished="09:00:00", code=0, reason="Completed", disruption=None, rv="1", uid=None):
    """A Pod as kubectl prints it, with the fields the parser reads (one container)."""
    term = {"exitCode": code, "reason": reason, "startedAt": _t(started), "finishedAt": _t(finished)}
    state = {"terminated": term} if finished else {"running": {"startedAt": _t(started)}}
    conditions = [{"type": "PodScheduled", "status": "True", "lastTransitionTime": _t(created)}]
    if disruption:
        conditions.append({"type": "DisruptionTarget", "status": "True", "reason": disruption[0],
                           "lastTransitionTime": _t(disruption[1]), "message": "m"})
    meta = {"name": name, "namespace": ns, "uid": uid or f"pod-{name}", "resourceVersion": rv,
            "creationTimestamp": _t(created), "labels": labels or {}}
    if owner:
        meta["ownerReferences"] = [{"apiVersion": "batch/v1", "kind": owner[0], "name": owner[1],
                                    "uid": f"uid-{owner[1]}", "controller": True}]
    return {"apiVersion": "v1", "kind": "Pod", "metadata": meta,
            "spec": {"nodeName": node, "containers": [{"name": "trainer",
                                                       "resources": {"limits": {"nvidia.com/gpu": str(gpus)}}}]},
            "status": {"phase": phase, "startTime": _t(started), "conditions": conditions,
                       "containerStatuses": [{"name": "trainer", "restartCount": 0, "state": state}]}}


def _jobset_pod(jobset, attempt, index, node, **kw):
    labels = {"jobset.sigs.k8s.io/jobset-name": jobset, "jobset.sigs.k8s.io/restart-attempt": str(attempt),
              "batch.kubernetes.io/job-completion-index": str(index), "kueue.x-k8s.io/queue-name": "gpu-queue"}
    owner = ("Job", f"{jobset}-workers-0")
    return _pod(f"{jobset}-workers-0-{index}-a{attempt}", node, labels=labels, owner=owner, **kw)


def _jobset(name, *, terminal=None, restarts=0, rv="1", finished="12:00:00"):
    status = {"restarts": restarts}
    if terminal:
        status["terminalState"] = terminal
        status["conditions"] = [{"type": terminal, "status": "True", "reason": "AllJobsCompleted",
                                 "lastTransitionTime": _t(finished)}]
    return {"apiVersion": "jobset.x-k8s.io/v1alpha2", "kind": "JobSet",
            "metadata": {"name": name, "namespace": "team-a", "uid": f"uid-{name}", "resourceVersion": rv,
                         "creationTimestamp": _t("07:59:00")}, "status": status}


def _workload(owner_kind, owner, conditions, rv="1"):
    """A Kueue Workload owned by the job, with conditions as (type, reason, time)."""
    return {"apiVersion": "kueue.x-k8s.io/v1beta1", "kind": "Workload",
            "metadata": {"name": f"{owner_kind.lower()}-{owner}-1", "namespace": "team-a", "uid": f"wl-{owner}",
                         "resourceVersion": rv, "creationTimestamp": _t("07:59:30"),
                         "ownerReferences": [{"kind": owner_kind, "name": owner, "uid": f"uid-{owner}",
                                              "controller": True}]},
            "spec": {"queueName": "gpu-queue", "priority": 1000},
            "status": {"conditions": [{"type": t, "status": "True", "reason": r, "lastTransitionTime": _t(at),
                                       "message": "m"} for t, r, at in conditions], "requeueState": {"count": 1}}}


def _lines(*objects) -> str:
    return "".join(json.dumps(o) + "\n" for o in objects)


def _jobs(con) -> list[dict]:
    build_jobs(con)
    return con.sql(f"SELECT {COLUMNS} FROM jobs ORDER BY job_id, instance").pl().to_dicts()


def test_jobset_restart_attempts_are_instances(tmp_path):
    """Attempt 0 fails on one pod (exit 1; its neighbour is stopped, 143) and JobSet restarts it: two instances, the
    first FAILED (as Slurm writes an instance its requeue policy restarts), the second COMPLETED."""
    objects = [_jobset("train", terminal="Completed", restarts=1, finished="11:00:05"),
               _jobset_pod("train", 0, 0, "n1", phase="Failed", finished="08:30:00", code=1, reason="Error"),
               _jobset_pod("train", 0, 1, "n2", phase="Failed", finished="08:30:04", code=143, reason="Error"),
               _jobset_pod("train", 1, 0, "n3", created="08:31:00", started="08:31:30", finished="11:00:00"),
               _jobset_pod("train", 1, 1, "n2", created="08:31:00", started="08:31:20", finished="11:00:02")]
    con, _ = _ingest(tmp_path, {"snap.jsonl": _lines(*objects)})
    first, second = _jobs(con)
    con.close()
    assert (first["job_id"], first["instance"], first["user_name"], first["job_name"], first["partition"]) == (
        "team-a/train", 0, "team-a", "train", "gpu-queue")
    assert (first["state"], first["exit_code"], first["exit_signal"], first["reason"]) == ("FAILED", 1, 0, "Error")
    assert (first["submit_time"], first["start_time"], first["end_time"], first["elapsed_s"]) == (
        datetime(2025, 1, 15, 7, 59), datetime(2025, 1, 15, 8, 0, 10), datetime(2025, 1, 15, 8, 30, 4), 1794)
    assert (first["nodes"], first["n_nodes"], first["n_gpus"], first["restarts"]) == (["n1", "n2"], 2, 16, 0)
    assert (second["instance"], second["state"], second["nodes"], second["n_gpus"], second["restarts"]) == (
        1, "COMPLETED", ["n2", "n3"], 16, 1)
    assert (second["submit_time"], second["start_time"], second["end_time"]) == (
        datetime(2025, 1, 15, 8, 31), datetime(2025, 1, 15, 8, 31, 20), datetime(2025, 1, 15, 11, 0, 2))


def test_fixture_pod_deleted_by_the_taint_manager_is_node_fail(tmp_path):
    """The fixtures' JobSet attempt 1: one pod preempted, one deleted by the taint manager (its node tainted), a
    Kueue eviction for preemption: the node's failure decides (the infrastructure's), with the DisruptionTarget
    reason; the Workload gives queue and priority, the JobSet its uid."""
    con, _ = _ingest(tmp_path, {"pods.json": _fixture("pods_list.json"),
                                "workloads.json": _fixture("workloads_list.json")})
    build_jobs(con)
    rows = con.sql("SELECT job_id, job_id_raw, instance, state, reason, partition, priority, nodes, n_gpus, "
                   "start_time, end_time, restarts FROM jobs ORDER BY job_id").fetchall()
    con.close()
    assert rows[0] == ("team-a/llama-pretrain", "5e4d3c2b-4444-4a1b-9c8d-000000000030", 0, "NODE_FAIL",
                       "DeletionByTaintManager", "gpu-queue", 100, ["gpu-node-17", "gpu-node-18"], 16,
                       datetime(2024, 3, 21, 15, 41, 2), datetime(2024, 3, 21, 15, 50, 30), 1)
    # the PyTorchJob whose pods no snapshot holds: one instance from its own status, restarting, so running
    assert rows[1][:4] == ("team-b/bert-finetune", "d4c3b2a1-5555-4e6f-8a7b-000000000040", 0, "RUNNING")
    assert rows[1][10] is None


def test_oomkilled_is_out_of_memory_and_a_pod_without_owner_is_a_job(tmp_path):
    oom = _pod("solo", "n7", phase="Failed", finished="08:20:00", code=137, reason="OOMKilled")
    service = _pod("web-7d9f", "n8", owner=("ReplicaSet", "web-7d9f"))  # a Deployment's pod: no job
    drained = _pod("zz-drained", "n9", phase="Failed", finished="08:30:00", code=143, reason="Error",
                   disruption=("EvictionByEvictionAPI", "08:29:50"))  # kubectl drain: an operator's, as scancel
    con, _ = _ingest(tmp_path, {"snap.jsonl": _lines(oom, service, drained)})
    row, cancelled = _jobs(con)
    con.close()
    assert (cancelled["job_id"], cancelled["state"], cancelled["exit_signal"]) == ("team-a/zz-drained", "CANCELLED", 15)
    assert (row["job_id"], row["state"], row["exit_code"], row["exit_signal"], row["reason"]) == (
        "team-a/solo", "OUT_OF_MEMORY", 0, 9, "OOMKilled")
    assert (row["end_time"], row["n_gpus"], row["nodes"]) == (datetime(2025, 1, 15, 8, 20), 8, ["n7"])


def test_kueue_preemption_is_preempted(tmp_path):
    """Kueue evicts the Workload of a batch Job to admit a higher priority one: the pods end SIGTERMed (143)
    with no DisruptionTarget; Kueue's Evicted/Preempted conditions say why."""
    job = {"apiVersion": "batch/v1", "kind": "Job",
           "metadata": {"name": "sweep", "namespace": "team-a", "uid": "uid-sweep", "resourceVersion": "5",
                        "creationTimestamp": _t("07:59:00"), "labels": {"kueue.x-k8s.io/queue-name": "gpu-queue"}},
           "status": {"startTime": _t("08:00:00")}}
    pods = [_pod(f"sweep-{i}", f"n{i}", owner=("Job", "sweep"), phase="Failed", finished="09:10:00", code=143,
                 reason="Error") for i in (1, 2)]
    workload = _workload("Job", "sweep", [("Admitted", "Admitted", "07:59:50"), ("Evicted", "Preempted", "09:09:58"),
                                          ("Preempted", "InClusterQueue", "09:09:58")])
    con, _ = _ingest(tmp_path, {"snap.jsonl": _lines(job, *pods, workload)})
    (row,) = _jobs(con)
    eligible = con.execute("SELECT eligible_time, priority FROM jobs").fetchall()
    con.close()
    assert (row["job_id"], row["state"], row["reason"], row["partition"], row["n_gpus"]) == (
        "team-a/sweep", "PREEMPTED", "InClusterQueue", "gpu-queue", 16)
    # submitted when the Job was created, eligible when Kueue admitted it, started when its first pod did
    assert (row["submit_time"], row["start_time"]) == (datetime(2025, 1, 15, 7, 59), datetime(2025, 1, 15, 8, 0, 10))
    assert eligible == [(datetime(2025, 1, 15, 7, 59, 50), 1000)]


def test_pods_recreated_later_are_a_new_attempt_and_deadline_is_timeout(tmp_path):
    """A PyTorchJob's pods recreated an hour later (the operator's restart) are instance 1; a Job past its
    activeDeadlineSeconds is TIMEOUT."""
    label = {"training.kubeflow.org/job-name": "bert"}
    pods = [_pod("bert-worker-0", "n1", labels=label, owner=("PyTorchJob", "bert"), phase="Failed",
                 finished="08:40:00", code=1, reason="Error"),
            _pod("bert-worker-0", "n4", labels=label, owner=("PyTorchJob", "bert"), created="09:00:00",
                 started="09:00:30", finished=None, phase="Running", uid="pod-bert-again")]
    late = _pod("late-abc", "n5", owner=("Job", "late"), phase="Failed", finished="10:00:00", code=137,
                reason="DeadlineExceeded")
    con, _ = _ingest(tmp_path, {"snap.jsonl": _lines(*pods, late)})
    bert0, bert1, timeout = _jobs(con)
    con.close()
    assert (bert0["job_id"], bert0["instance"], bert0["state"], bert0["end_time"]) == (
        "team-a/bert", 0, "FAILED", datetime(2025, 1, 15, 8, 40))  # exit 1: it failed, then was restarted
    assert (bert1["instance"], bert1["state"], bert1["end_time"], bert1["nodes"]) == (1, "RUNNING", None, ["n4"])
    assert (timeout["job_id"], timeout["state"]) == ("team-a/late", "TIMEOUT")


def test_a_snapshot_read_twice_changes_no_job_and_a_changed_object_updates_it(tmp_path):
    running = _jobset_pod("train", 0, 0, "n1", finished=None, phase="Running", rv="10")
    snap = _lines(_jobset("train", rv="3"), running)
    con, _ = _ingest(tmp_path, {"a.jsonl": snap}, when=datetime(2025, 1, 15, 9))
    before = _jobs(con)
    assert [(r["state"], r["end_time"]) for r in before] == [("RUNNING", None)]
    assert _jobs(con) == before  # built again with no kubernetes/ file new: not staged, kept as they were
    con.close()
    con, _ = _ingest(tmp_path, {"b.jsonl": snap}, when=datetime(2025, 1, 15, 10))  # the same objects again
    assert _jobs(con) == before
    con.close()
    done = _jobset_pod("train", 0, 0, "n1", finished="11:00:00", rv="11")  # a new resourceVersion: it ended
    con, _ = _ingest(tmp_path, {"c.jsonl": _lines(_jobset("train", terminal="Completed", rv="4"), done)},
                     when=datetime(2025, 1, 15, 12))
    (after,) = _jobs(con)
    objects = con.execute("SELECT count(*) FROM k8s_objects").fetchall()[0][0]
    con.close()
    assert (after["state"], after["end_time"], after["elapsed_s"]) == ("COMPLETED", datetime(2025, 1, 15, 11), 10790)
    assert objects == 4  # each state once: the repeated snapshot stored nothing


def test_a_nightly_stages_only_the_jobs_its_files_touch(tmp_path):
    """Two JobSets; a later file holds one of them again, ended: only that job is staged again (the other's rows
    are kept as they were), and the tables are what a build from scratch gives."""
    first = [_jobset("train", rv="3"), _jobset_pod("train", 0, 0, "n1", finished=None, phase="Running", rv="10"),
             _jobset("eval", rv="5"), _jobset_pod("eval", 0, 0, "n2", finished=None, phase="Running", rv="12")]
    con, _ = _ingest(tmp_path, {"a.jsonl": _lines(*first)}, when=datetime(2025, 1, 15, 9))
    _jobs(con)
    con.execute("UPDATE jobs SET reason = 'untouched' WHERE job_id = 'team-a/eval'")  # a mark a restage would undo
    con.close()
    done = _jobset_pod("train", 0, 0, "n1", finished="11:00:00", rv="11")
    con, _ = _ingest(tmp_path, {"b.jsonl": _lines(_jobset("train", terminal="Completed", rv="4"), done)},
                     when=datetime(2025, 1, 15, 12))
    assert set(con.execute("SELECT job_key FROM k8s_objects WHERE file LIKE '%b.jsonl'").fetchall()) == {("train",)}
    nightly = {r["job_id"]: r for r in _jobs(con)}
    con.execute("DELETE FROM derived_marks")  # the same warehouse built from scratch
    scratch = {r["job_id"]: r for r in _jobs(con)}
    con.close()
    assert nightly["team-a/eval"]["reason"] == "untouched" and nightly["team-a/train"]["state"] == "COMPLETED"
    assert {**nightly["team-a/eval"], "reason": scratch["team-a/eval"]["reason"]} == scratch["team-a/eval"]
    assert nightly["team-a/train"] == scratch["team-a/train"]


def test_goodput_run_blames_a_node_failed_attempt_on_an_nvsentinel_xid(tmp_path):
    """The same history as tests/test_node_health_parser.py's Slurm NODE_FAIL job 100 on gpu-node-[41-42]: here
    a JobSet whose pod on gpu-node-42 the taint manager deleted after NVSentinel saw XID 79 there."""
    objects = [_jobset("train", terminal="Failed", finished="10:31:00"),
               _jobset_pod("train", 0, 0, "gpu-node-41", phase="Failed", finished="10:30:40", code=143,
                           reason="Error", started="08:00:00"),
               _jobset_pod("train", 0, 1, "gpu-node-42", phase="Failed", finished="10:30:30", code=137,
                           reason="Error", started="08:00:00", disruption=("DeletionByTaintManager", "10:30:20"))]
    src = _source(tmp_path, {"pods.jsonl": _lines(*objects)}, when=datetime(2025, 1, 15, 11))
    (src / "slurm").mkdir()  # `goodput run` requires slurm/ (analysis/commands/preflight.py): a mixed fleet
    (src / "slurm" / "sacct.txt").write_text(SACCT.splitlines()[0] + "\n" + SACCT.splitlines()[2] + "\n")  # job 101
    (src / "node_health").mkdir()
    shutil.copy(NODE_HEALTH / "nvsentinel_cloudevents.jsonl", src / "node_health" / "cloudevents.jsonl")
    db, out = tmp_path / "w.duckdb", tmp_path / "out"
    result = CliRunner().invoke(main, ["run", "--source", str(src), "--db", str(db), "--out", str(out), "-q"])
    assert result.exit_code == EXIT_OK, result.output
    con = duckdb.connect(str(db), read_only=True)
    primary = con.execute("SELECT job_id, instance, state, cause, host, rule, source FROM failure_attribution "
                          "WHERE is_primary").fetchall()
    failure = con.execute("SELECT is_failure, infra_failure FROM job_failure_causes").fetchall()
    jobs = con.execute("SELECT job_id, state FROM jobs ORDER BY job_id").fetchall()
    con.close()
    assert primary == [("team-a/train", 0, "NODE_FAIL", "gpu_unavailable", "gpu-node-42", "xid-79", "node_health")]
    assert failure == [(True, True)]
    assert jobs == [("101", "COMPLETED"), ("team-a/train", "NODE_FAIL")]  # sacct's jobs beside the workloads'
    why = CliRunner().invoke(main, ["why", "--db", str(db), "team-a/train"])
    assert "primary cause: gpu_unavailable (hardware) on gpu-node-42, rule xid-79" in why.output, why.output



def test_hostname_not_in_node_affinity_is_an_excluded_host(tmp_path):
    """A pod kept off nodes by a required node affinity `kubernetes.io/hostname NotIn` (Kubernetes' `--exclude`):
    the instance's excluded_hosts, which the lemon feature excluded_jobs counts as it counts Slurm's."""
    def avoiding(pod, hosts, operator="NotIn", key="kubernetes.io/hostname"):
        pod["spec"]["affinity"] = {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
            "nodeSelectorTerms": [{"matchExpressions": [{"key": key, "operator": operator, "values": hosts},
                                                        {"key": "nvidia.com/gpu.product", "operator": "In",
                                                         "values": ["NVIDIA-H100-80GB-HBM3"]}]}]}}}
        return pod
    objects = [avoiding(_jobset_pod("train", 0, 0, "n1"), ["n7", "n9"]),
               avoiding(_jobset_pod("train", 0, 1, "n2"), ["n9", "n8"]),
               avoiding(_pod("picky", "n3"), ["n1"], operator="In"),  # a pod placed on n1 excludes nothing
               avoiding(_pod("zone", "n4"), ["n5"], key="topology.kubernetes.io/zone")]
    con, _ = _ingest(tmp_path, {"snap.jsonl": _lines(*objects)})
    build_jobs(con)
    rows = con.sql("SELECT job_id, excluded_hosts FROM jobs ORDER BY job_id").fetchall()
    excluded = lemons.excludes(con).sort("host").rows()
    con.close()
    assert rows == [("team-a/picky", None), ("team-a/train", ["n7", "n8", "n9"]), ("team-a/zone", None)]
    assert excluded == [("team-a/train", datetime(2025, 1, 15, 8), h) for h in ("n7", "n8", "n9")]
