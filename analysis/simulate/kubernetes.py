"""The simulated history as a Kubernetes cluster exports it (`goodput simulate --scheduler kubernetes`): JobSets
run by Kueue instead of Slurm jobs, NVIDIA NVSentinel health events instead of the kernel's XID lines.

The engine and its random stream are Slurm's, untouched: the same seed gives the same jobs, instances, faults and
truth/. What changes is only how they are written (docs/simulator.md#kubernetes):
- kubernetes/watch-<date>.jsonl: watch events ({"type": ADDED|MODIFIED|DELETED, "object": ...}) of the objects as
  a watch would have seen them change, at the time they changed: per job a JobSet and its Kueue Workload, per
  instance (restart attempt) one pod per node. Nothing here draws from a random stream: uids are hashes of the
  seed and the object, resourceVersions one counter (each object's increase with each change).
- kubernetes/events-<date>.jsonl and nodes-<date>.jsonl: the drains as kubelet Events and a Node watch
  (NodeStates, written at the end from the recorder's drains).
- node_health/nvsentinel-<date>.jsonl: an NVSentinel HealthEvent for each kernel XID line (XidRouter), every
  third as a CloudEvent the way NVSentinel's event exporter wraps it.
"""
from __future__ import annotations

import calendar
import hashlib
import json
import re
import uuid
from datetime import datetime, timedelta
from pathlib import Path

from analysis.simulate.cluster import GPU_BUS
from analysis.simulate.workload import Job
from analysis.simulate.writers import DailyLog, iso

JOBSET_API, KUEUE_API = "jobset.x-k8s.io/v1alpha2", "kueue.x-k8s.io/v1beta1"
JOBSET_LABEL, ATTEMPT_LABEL = "jobset.sigs.k8s.io/jobset-name", "jobset.sigs.k8s.io/restart-attempt"
# the instance's end as the JobSet (terminal) and its pods show it; Slurm's exit code "code:signal" becomes a
# container exit code (a signal n: 128 + n, as the container runtime reports it)
TERMINAL = {"COMPLETED": ("Completed", "AllJobsCompleted", "jobset completed successfully"),
            "FAILED": ("Failed", "FailedJobs", "jobset failed due to one or more job failures"),
            "NODE_FAIL": ("Failed", "FailedJobs", "jobset failed due to one or more job failures"),
            "OUT_OF_MEMORY": ("Failed", "FailedJobs", "jobset failed due to one or more job failures"),
            # the JobSet's own spec.activeDeadlineSeconds, as Slurm's time limit (jobset constants.go)
            "TIMEOUT": ("Failed", "DeadlineExceeded", "jobset was active longer than specified deadline")}
# XID -> (isFatal, recommendedAction) as NVSentinel's XID catalogue asks: an application's XID asks nothing
XID_ACTIONS = {"13": (False, "NONE"), "31": (False, "NONE"), "43": (False, "NONE"), "48": (True, "COMPONENT_RESET"),
               "63": (False, "NONE"), "64": (True, "CONTACT_SUPPORT"), "74": (True, "COMPONENT_RESET"),
               "79": (True, "RESTART_BM"), "94": (False, "APPLICATION_RESTART"), "95": (True, "COMPONENT_RESET"),
               "119": (True, "COMPONENT_RESET"), "120": (True, "COMPONENT_RESET")}
_XID = re.compile(r"NVRM: (Xid \(PCI:([0-9a-f:]+)\): (\d+), .*)$")


def jobset_name(job: Job) -> str:
    """The JobSet's name: DNS-1035 (lowercase, '-', starts with a letter), from the job id (1000123_4 ->
    job-1000123-4)."""
    return "job-" + job.job_id.replace("_", "-")


class KubernetesLog:
    """kubernetes/: the JobSet, Workload and pods of each job, as watch events on the day they changed."""

    def __init__(self, out: Path, start: datetime, hosts: list[str], seed: int):
        self.log = DailyLog(out / "kubernetes", "watch-{date}.jsonl", start)
        self.t0, self.hosts, self.seed = start, hosts, seed
        self.rv = 100_000
        self.created: set[int] = set()  # jobs whose JobSet and Workload were written (raw ids; dropped at the end)
        self.started: dict[int, int] = {}  # raw id -> the instance whose running pods were written
        self.requeues: dict[int, dict[str, int]] = {}  # raw id -> Kueue evictions by reason

    # -- what the engine did ---------------------------------------------------------------
    def catch_up(self, jobs) -> None:
        """At a day boundary: the jobs submitted and the instances started since the last one, written at the
        time they happened (the day before, not flushed yet: DailyLog keeps it LOOKBACK_S longer)."""
        for job in sorted(jobs, key=lambda j: j.raw_id):
            self._created(job)
            if job.start >= 0:
                self._started(job)

    def instance(self, job: Job, end: float | None, state: str, exit_code: str, cause_host: str | None,
                 fault_time: float | None) -> None:
        """An instance ended (``end``), or is still running or waiting when the period ends (``end`` None)."""
        self._created(job)
        if job.start >= 0:
            self._started(job)
        if end is None:
            return
        requeued = state in ("PREEMPTED", "REQUEUED") or (
            state in ("FAILED", "NODE_FAIL") and fault_time is not None and job.requeue)
        evicted = {"PREEMPTED": "Preempted", "REQUEUED": "NodeFailures" if cause_host else None}.get(state)
        if evicted:
            counts = self.requeues.setdefault(job.raw_id, {})
            counts[evicted] = counts.get(evicted, 0) + 1
        deleted = state == "CANCELLED"  # the user deleted the JobSet: its Workload and pods go with it
        kind = "DELETED" if deleted else "MODIFIED"
        if job.start >= 0:
            for i, node in enumerate(job.nodes):
                self._emit(end, kind, self._pod(job, i, node, end, state, exit_code, cause_host))
        if requeued:  # a new attempt follows: the JobSet restarts, the Workload waits for quota again
            self._emit(end, kind, self._jobset(job, end, restarts=job.instance + 1))
            self._emit(end, kind, self._workload(job, end, "requeued", state))
            return
        self._emit(end, kind, self._jobset(job, end, restarts=job.instance, state=state))
        self._emit(end, kind, self._workload(job, end, "finished", state))
        self.created.discard(job.raw_id)
        self.requeues.pop(job.raw_id, None)
        self.started.pop(job.raw_id, None)

    def _created(self, job: Job) -> None:
        if job.raw_id not in self.created:
            self.created.add(job.raw_id)
            self._emit(job.submit, "ADDED", self._jobset(job, job.submit, restarts=0, suspended=True))
            self._emit(job.submit, "ADDED", self._workload(job, job.submit, "pending"))

    def _started(self, job: Job) -> None:
        if self.started.get(job.raw_id) == job.instance:
            return
        self.started[job.raw_id] = job.instance
        self._emit(job.start, "MODIFIED", self._jobset(job, job.start, restarts=job.instance))
        self._emit(job.start, "MODIFIED", self._workload(job, job.start, "admitted"))
        for i, node in enumerate(job.nodes):
            self._emit(job.start, "ADDED", self._pod(job, i, node, None, "RUNNING", "0:0", None))

    # -- the objects -------------------------------------------------------------------------
    def _emit(self, t: float, kind: str, obj: dict) -> None:
        self.rv += 1
        obj["metadata"]["resourceVersion"] = str(self.rv)
        self.log.add(t, json.dumps({"type": kind, "object": obj}, separators=(",", ":")))

    def _uid(self, *key) -> str:
        digest = hashlib.blake2b("/".join(map(str, (self.seed, *key))).encode(), digest_size=16).digest()
        return str(uuid.UUID(bytes=digest, version=4))

    def _ts(self, t: float) -> str:
        return iso(self.t0, t) + "Z"

    def _meta(self, job: Job, name: str, uid: str, labels: dict, owner: dict | None = None,
              created: float | None = None) -> dict:
        meta = {"name": name, "namespace": job.user, "uid": uid,
                "creationTimestamp": self._ts(job.submit if created is None else created),
                "labels": labels}
        if owner:
            meta["ownerReferences"] = [{**owner, "controller": True, "blockOwnerDeletion": True}]
        return meta

    def _jobset(self, job: Job, t: float, restarts: int, suspended: bool = False, state: str | None = None) -> dict:
        name = jobset_name(job)
        status: dict = {"restarts": restarts, "restartsCountTowardsMax": restarts}
        if state in TERMINAL:
            terminal, reason, message = TERMINAL[state]
            status["terminalState"] = terminal
            status["conditions"] = [{"type": terminal, "status": "True", "reason": reason, "message": message,
                                     "lastTransitionTime": self._ts(t)}]
        elif suspended:
            status["conditions"] = [{"type": "Suspended", "status": "True", "reason": "SuspendedJobs",
                                     "message": "jobset is suspended", "lastTransitionTime": self._ts(t)}]
        return {"apiVersion": JOBSET_API, "kind": "JobSet",
                "metadata": self._meta(job, name, self._uid("jobset", job.job_id),
                                       {"kueue.x-k8s.io/queue-name": f"{job.account}-queue",
                                        "kueue.x-k8s.io/priority-class": job.qos,
                                        "app.kubernetes.io/name": job.name}),
                "spec": {"suspend": suspended, "failurePolicy": {"maxRestarts": 100 if job.requeue else 0},
                         "replicatedJobs": [{"name": "workers", "replicas": 1, "template": {"spec": {
                             "parallelism": job.nnodes, "completions": job.nnodes,
                             "activeDeadlineSeconds": int(job.limit),
                             **({"template": {"spec": _avoiding(job.exclude)}} if job.exclude else {})}}}]},
                "status": status}

    def _workload(self, job: Job, t: float, phase: str, state: str | None = None) -> dict:
        """Kueue's Workload: ``phase`` pending (no quota yet), admitted, requeued (evicted or its JobSet
        restarted) or finished."""
        at = self._ts(t)
        cond = lambda type_, status, reason, message: {  # noqa: E731
            "type": type_, "status": status, "reason": reason, "message": message, "lastTransitionTime": at}
        evictions = self.requeues.get(job.raw_id, {})
        if phase == "pending":
            conds = [cond("QuotaReserved", "False", "Pending", "couldn't assign flavors to pod set workers: "
                          "insufficient unused quota for nvidia.com/gpu in flavor default-flavor")]
        elif phase == "admitted":
            conds = [cond("QuotaReserved", "True", "QuotaReserved", f"Quota reserved in ClusterQueue {job.account}-cq"),
                     cond("Admitted", "True", "Admitted", "The workload is admitted")]
        elif phase == "requeued" and state == "PREEMPTED":
            conds = [cond("Evicted", "True", "Preempted", "Preempted to accommodate a higher priority Workload"),
                     cond("Preempted", "True", "InClusterQueue", "Preempted to accommodate a workload due to "
                          "prioritization in the ClusterQueue"),
                     cond("QuotaReserved", "False", "Pending", "The workload has no reservation"),
                     cond("Admitted", "False", "NoReservation", "The workload has no reservation"),
                     cond("Requeued", "True", "Preempted", "Preempted to accommodate a higher priority Workload")]
        elif phase == "requeued" and state == "REQUEUED" and "NodeFailures" in evictions:
            conds = [cond("Evicted", "True", "NodeFailures", "Workload was evicted as there were unhealthy nodes"),
                     cond("QuotaReserved", "False", "Pending", "The workload has no reservation"),
                     cond("Admitted", "False", "NoReservation", "The workload has no reservation"),
                     cond("Requeued", "True", "NodeFailures", "Workload was evicted as there were unhealthy nodes")]
        elif phase == "requeued":  # the JobSet restarts its jobs itself: the Workload keeps its admission
            conds = [cond("QuotaReserved", "True", "QuotaReserved", f"Quota reserved in ClusterQueue {job.account}-cq"),
                     cond("Admitted", "True", "Admitted", "The workload is admitted")]
        else:
            ok = state == "COMPLETED"
            conds = [cond("Finished", "True", "Succeeded" if ok else "Failed",
                          "Job finished successfully" if ok else TERMINAL.get(state, ("", "", "cancelled"))[2])]
        status: dict = {"conditions": conds}
        if evictions:
            status["requeueState"] = {"count": sum(evictions.values())}
            status["schedulingStats"] = {"evictions": [{"reason": r, "underlyingCause": "", "count": n}
                                                       for r, n in sorted(evictions.items())]}
        owner = {"apiVersion": JOBSET_API, "kind": "JobSet", "name": jobset_name(job),
                 "uid": self._uid("jobset", job.job_id)}
        name = f"jobset-{jobset_name(job)}-{self._uid('workload', job.job_id)[:5]}"
        return {"apiVersion": KUEUE_API, "kind": "Workload",
                "metadata": self._meta(job, name, self._uid("workload", job.job_id),
                                       {"kueue.x-k8s.io/job-uid": owner["uid"]}, owner),
                "spec": {"queueName": f"{job.account}-queue", "priorityClassName": job.qos,
                         "priority": job.priority},
                "status": status}

    def _pod(self, job: Job, i: int, node: int, end: float | None, state: str, exit_code: str,
             cause_host: str | None) -> dict:
        js, host = jobset_name(job), self.hosts[node]
        uid = self._uid("pod", job.job_id, job.instance, i)
        job_name = f"{js}-workers-0"
        started = self._ts(job.start)
        conds = [{"type": "PodScheduled", "status": "True", "lastTransitionTime": started}]
        if end is None:
            phase, container = "Running", {"state": {"running": {"startedAt": started}}, "ready": True}
        else:
            code, reason, disruption = _container_end(state, exit_code, host == cause_host, i)
            phase = "Succeeded" if code == 0 else "Failed"
            container = {"state": {"terminated": {"exitCode": code, "reason": reason, "startedAt": started,
                                                  "finishedAt": self._ts(end)}}, "ready": False}
            if disruption:
                conds.append({"type": "DisruptionTarget", "status": "True", "reason": disruption[0],
                              "message": disruption[1], "lastTransitionTime": self._ts(end)})
        labels = {JOBSET_LABEL: js, "jobset.sigs.k8s.io/replicatedjob-name": "workers",
                  "jobset.sigs.k8s.io/job-index": "0", ATTEMPT_LABEL: str(job.instance),
                  "batch.kubernetes.io/job-completion-index": str(i),
                  "kueue.x-k8s.io/queue-name": f"{job.account}-queue"}
        owner = {"apiVersion": "batch/v1", "kind": "Job", "name": job_name,
                 "uid": self._uid("job", job.job_id, job.instance)}
        gpus = str(job.per_node)
        return {"apiVersion": "v1", "kind": "Pod",
                "metadata": self._meta(job, f"{job_name}-{i}-{uid[-5:]}", uid, labels, owner, job.start),
                "spec": {"nodeName": host, "containers": [{"name": "trainer", "image": "nvcr.io/nvidia/pytorch:24.03-py3",
                         "resources": {"limits": {"nvidia.com/gpu": gpus}, "requests": {"nvidia.com/gpu": gpus}}}],
                         **_avoiding(job.exclude)},
                "status": {"phase": phase, "startTime": started, "conditions": conds,
                           "containerStatuses": [{"name": "trainer", "restartCount": 0, **container}]}}


def _avoiding(hosts: tuple[str, ...]) -> dict:
    """The pod spec part that keeps a pod off ``hosts``: what a Kubernetes user writes for `sbatch --exclude`."""
    if not hosts:
        return {}
    return {"affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
        {"matchExpressions": [{"key": "kubernetes.io/hostname", "operator": "NotIn", "values": list(hosts)}]}]}}}}


def _container_end(state: str, exit_code: str, on_fault_host: bool, index: int) -> tuple[int, str, tuple | None]:
    """(exit code, reason, DisruptionTarget (reason, message) or None) of one pod of an instance that ended."""
    taint = ("DeletionByTaintManager", "Taint manager: deleting due to NoExecute taint")
    if state == "COMPLETED":
        return 0, "Completed", None
    if state == "NODE_FAIL":  # the node stopped answering: its pod is evicted, the others killed by the restart
        return (137, "Error", taint) if on_fault_host else (143, "Error", None)
    if state == "PREEMPTED":
        return 143, "Error", ("PreemptionByScheduler", "Kubernetes default scheduler: preempting to accommodate "
                                                       "a higher priority pod")
    if state == "REQUEUED":  # a drain (maintenance, or health automation after a fault): the Eviction API
        return 143, "Error", ("EvictionByEvictionAPI", "Eviction API: evicting")
    if state == "OUT_OF_MEMORY":
        return (137, "OOMKilled", None) if index == 0 else (143, "Error", None)
    if state == "FAILED":
        code, signal = (int(x) for x in exit_code.split(":"))
        return (128 + signal if signal else code, "Error", None) if on_fault_host or index == 0 else (143, "Error", None)
    return 143, "Error", None  # CANCELLED, TIMEOUT: the pods are terminated (SIGTERM)


class XidRouter:
    """Stands in for the kernel log in the Kubernetes world: NVRM Xid lines become NVSentinel HealthEvents in
    node_health/ (its syslog monitor reads the same journal), every other line stays a kernel/ line (a node log
    collector ships the journal on Kubernetes too)."""

    def __init__(self, kernel: DailyLog, out: Path, start: datetime):
        self.kernel, self.t0 = kernel, start
        self.health = DailyLog(out / "node_health", "nvsentinel-{date}.jsonl", start)
        self.files, self.days = kernel.files, kernel.days  # what _malformed and callers read of a DailyLog
        self.count = 0

    def add(self, t: float, text: str) -> None:
        if "NVRM: Xid" not in text:
            self.kernel.add(t, text)
            return
        m = _XID.search(text)
        host = text.split(" ", 2)[1]
        message, pci, code = m.group(1), m.group(2), m.group(3)
        fatal, action = XID_ACTIONS.get(code, (True, "CONTACT_SUPPORT"))
        bus = pci.split(":")[1]
        event = {"version": 1, "agent": "syslog-health-monitor", "componentClass": "GPU", "checkName": "SysLogsXIDError",
                 "isFatal": fatal, "isHealthy": False, "message": message, "recommendedAction": action,
                 "errorCode": [code],
                 "entitiesImpacted": [{"entityType": "GPU", "entityValue": str(GPU_BUS.index(bus))
                                       if bus in GPU_BUS else "0"}, {"entityType": "PCI", "entityValue": pci}],
                 "generatedTimestamp": iso(self.t0, t) + "Z", "nodeName": host}
        self.count += 1
        if self.count % 3 == 0:  # NVSentinel's event exporter: a structured-mode CloudEvent
            event = {"specversion": "1.0", "type": "com.nvidia.nvsentinel.health.v1",
                     "source": "nvsentinel://simulated/healthevents", "id": str(uuid.UUID(int=self.count, version=4)),
                     "time": iso(self.t0, t) + "Z", "data": {"healthEvent": event}}
        self.health.add(t, json.dumps(event, separators=(",", ":")))

    def flush(self, now: float | None = None) -> None:
        self.kernel.flush(now)
        self.health.flush(now)


class NodeStates:
    """The drains as a Kubernetes cluster records them (the Slurm world's slurm_events/, written at the end):
    - kubernetes/events-<date>.jsonl, event-exporter lines: the kubelet's NodeNotSchedulable when a node is
      cordoned and NodeSchedulable when it is uncordoned; for a node that stopped answering (Slurm's DOWN) the
      node controller's NodeNotReady and the kubelet's NodeReady when it is back.
    - kubernetes/nodes-<date>.jsonl, a Node watch: each node ADDED at the start, then MODIFIED at each change
      (spec.unschedulable and its taint; the Ready condition). A health check's drain is NVSentinel's
      fault-quarantine cordon: the Node carries its quarantineHealthEvent annotation (the HealthEvent as Go's
      encoding/json writes it: generatedTimestamp {seconds, nanos}) until the uncordon. The site's health checks
      report to NVSentinel under their own names (its platform connector takes any agent's events), so the check
      name and message are Slurm's. A maintenance drain is a cordon by hand: nothing says why.
    A node is cordoned or not: a drain that starts while the node is drained (a second fault) adds its event to
    the annotation and keeps the node cordoned until the later of the two ends."""

    def __init__(self, out: Path, start: datetime, hosts: list[str], seed: int, horizon: float):
        self.events = DailyLog(out / "kubernetes", "events-{date}.jsonl", start)
        self.nodes = DailyLog(out / "kubernetes", "nodes-{date}.jsonl", start)
        self.t0, self.hosts, self.seed, self.horizon = start, hosts, seed, horizon
        self.rv = 1_000_000_000  # resourceVersions of the nodes and events, apart from the workloads'
        self.written = 0
        self.ready_since: dict[str, float] = {}  # host -> when its Ready condition last turned True

    def write(self, drains: list[tuple]) -> None:
        """``drains``: the recorder's (host, start, back, state, reason, user)."""
        for host in self.hosts:
            self._node(0.0, "ADDED", host, None, [], ready=True)
        by_node: dict[tuple[str, str], list[tuple]] = {}
        for d in sorted(drains, key=lambda d: (d[0], d[1])):
            by_node.setdefault((d[0], "DOWN" if d[3] == "DOWN" else "DRAIN"), []).append(d)
        changes = []  # (time, host, what, state, HealthEvents): written in time order, each node's versions rising
        for (host, state), periods in sorted(by_node.items()):
            end, health = -1.0, []
            for _, start, back, _, reason, _ in periods:
                if start >= end:  # the node was back: a new period
                    if 0 <= end < self.horizon:
                        changes.append((end, host, "back", state, []))
                    health = []
                    changes.append((start, host, "begin", state, []))
                if reason.startswith("healthcheck: "):
                    check, message = reason[len("healthcheck: "):].split(": ", 1)
                    health = [*health, self._health_event(host, start, check, message)]
                changes.append((start, host, "node", state, health))
                end = max(end, back)
            if end < self.horizon:
                changes.append((end, host, "back", state, []))
        for t, host, what, state, health in sorted(changes, key=lambda c: c[0]):  # stable: a begin before its node
            if what == "begin":
                self._event(t, host, "NodeNotReady" if state == "DOWN" else "NodeNotSchedulable")
            elif what == "node":
                self._node(t, "MODIFIED", host, state, health, ready=state != "DOWN")
            else:
                self._back(host, state, t)
        self.events.flush()
        self.nodes.flush()

    def _back(self, host: str, state: str, t: float) -> None:
        self._event(t, host, "NodeReady" if state == "DOWN" else "NodeSchedulable")
        if state == "DOWN":
            self.ready_since[host] = t
        self._node(t, "MODIFIED", host, None, [], ready=True)

    def _ts(self, t: float) -> str:
        return iso(self.t0, t) + "Z"

    def _uid(self, *key) -> str:
        digest = hashlib.blake2b("/".join(map(str, (self.seed, *key))).encode(), digest_size=16).digest()
        return str(uuid.UUID(bytes=digest, version=4))

    def _event(self, t: float, host: str, reason: str) -> None:
        """A core/v1 Event as the event exporter writes it (kubelet names a Node by its name, uid included)."""
        self.rv += 1
        self.written += 1
        component = "node-controller" if reason == "NodeNotReady" else "kubelet"
        at = self._ts(t)
        event = {"metadata": {"name": f"{host}.{self.written:016x}", "namespace": "default",
                              "uid": self._uid("event", self.written), "resourceVersion": str(self.rv),
                              "creationTimestamp": at},
                 "reason": reason, "message": f"Node {host} status is now: {reason}",
                 "source": {"component": component, **({"host": host} if component == "kubelet" else {})},
                 "firstTimestamp": at, "lastTimestamp": at, "count": 1, "type": "Normal", "eventTime": None,
                 "reportingComponent": component, "reportingInstance": host if component == "kubelet" else "",
                 "involvedObject": {"kind": "Node", "name": host, "uid": host, "apiVersion": "v1"}}
        self.events.add(t, json.dumps(event, separators=(",", ":")))

    def _health_event(self, host: str, t: float, check: str, message: str) -> dict:
        return {"version": 1, "agent": "site-health-checks", "componentClass": "NODE", "checkName": check,
                "isFatal": True, "message": message,
                "generatedTimestamp": {"seconds": calendar.timegm((self.t0 + timedelta(seconds=t)).timetuple())},
                "nodeName": host}

    def _node(self, t: float, kind: str, host: str, state: str | None, health: list[dict], ready: bool) -> None:
        self.rv += 1
        at = self._ts(t)
        meta: dict = {"name": host, "uid": self._uid("node", host), "resourceVersion": str(self.rv),
                      "creationTimestamp": self._ts(0.0),
                      "labels": {"kubernetes.io/hostname": host, "nvidia.com/gpu.present": "true"}}
        spec: dict = {}
        if state == "DRAIN":
            spec = {"unschedulable": True, "taints": [{"key": "node.kubernetes.io/unschedulable",
                                                        "effect": "NoSchedule", "timeAdded": at}]}
            if health:  # NVSentinel's record of why (fault-quarantine's annotation keys)
                meta["annotations"] = {"quarantineHealthEvent": json.dumps(health, separators=(",", ":")),
                                       "quarantineHealthEventIsCordoned": "True",
                                       "quarantineHealthEventAppliedTaints": "[]"}
        elif state == "DOWN":
            spec = {"taints": [{"key": "node.kubernetes.io/unreachable", "effect": "NoExecute", "timeAdded": at}]}
        since = self._ts(self.ready_since.get(host, 0.0))
        condition = ({"type": "Ready", "status": "True", "reason": "KubeletReady",
                      "message": "kubelet is posting ready status", "lastTransitionTime": since} if ready else
                     {"type": "Ready", "status": "Unknown", "reason": "NodeStatusUnknown",
                      "message": "Kubelet stopped posting node status.", "lastTransitionTime": at})
        node = {"apiVersion": "v1", "kind": "Node", "metadata": meta, "spec": spec,
                "status": {"conditions": [condition]}}
        self.nodes.add(t, json.dumps({"type": kind, "object": node}, separators=(",", ":")))
