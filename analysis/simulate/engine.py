"""The event-driven Slurm model: a priority scheduler with preemption, node
faults that end the jobs on them, health-check drains, requeues and repairs."""
from __future__ import annotations

import heapq
import itertools
from collections import deque

import numpy as np

from analysis.simulate import faults as F
from analysis.simulate.cluster import LEMON_CAUSE, Cluster
from analysis.simulate.config import SimConfig
from analysis.simulate.draws import pick
from analysis.simulate.recorder import Recorder
from analysis.simulate.workload import Job

SUBMIT, END, FAULT, REPAIR, MAINT = range(5)
_UNKNOWN = object()
HEAD = 5  # a job excludes at most 4 hosts (Recorder.user_excludes)
MAX_PREEMPTIONS = 1  # then a job is exempt: keeps preemption from cascading through requeues
# Slurm's preempt/qos: a QOS preempts the ones below it, never its own (high jobs do not preempt high jobs)
QOS_RANK = {"low": 0, "normal": 1, "high": 2}
USER_EXITS = ("1:0", "1:0", "1:0", "2:0", "0:6", "0:9")  # a failed job's exit code, by how often
END_EXITS = {"CANCELLED": "0:15", "OUT_OF_MEMORY": "0:125"}
FAULT_EXITS = ("1:0", "0:6", "0:9")


class Engine:
    def __init__(self, cfg: SimConfig, cluster: Cluster, rng: np.random.Generator, rec: Recorder):
        self.cfg, self.cl, self.rng, self.rec = cfg, cluster, rng, rec
        n, g = cfg.nodes, cfg.gpus_per_node
        self.free = np.full(n, g)
        self.up = np.ones(n, dtype=bool)
        self.buckets = [set() for _ in range(g + 1)]
        self.buckets[g] = set(range(n))
        self.node_jobs: list[set[int]] = [set() for _ in range(n)]
        self.jobs: dict[int, Job] = {}
        self.pending_small: deque[Job] = deque()
        self.pending_big: list[Job] = []
        self.events: list = []
        self.seq = itertools.count()
        self.node_ends: list[deque[float]] = [deque() for _ in range(n)]  # recent job end times per node
        self.down_since = np.full(n, np.inf)
        # per node, of the jobs on it: the highest QOS, the latest start, whether one may not be preempted
        # again, and their GPUs (a multi-node job's all): what preemption asks, kept as arrays for a fast scan
        self.node_qos = np.full(n, -1)
        self.node_newest = np.full(n, -np.inf)
        self.node_exempt = np.zeros(n, dtype=bool)
        self.node_cost = np.zeros(n, dtype=np.int64)
        self.host_index = {h: i for i, h in enumerate(cluster.hosts)}
        # each bucket's first HEAD nodes in iteration order, forgotten whenever the bucket changes: the backfill
        # asks the same unchanged buckets for every waiting job (each time a scan of a sparse set)
        self.first: list = [_UNKNOWN] * (g + 1)
        # GPUs -> _first_with's answer for a job that excludes no host, until a bucket changes
        self.found: dict[int, int | None] = {}
        self.big_sorted = True  # pending_big is in priority order (only a submit can change that)
        self.node_low: list[set[int]] = [set() for _ in range(n)]  # the low-QOS (scavenger) jobs on each node

    # -- events ----------------------------------------------------------
    def push(self, t: float, kind: int, payload) -> None:
        heapq.heappush(self.events, (t, next(self.seq), kind, payload))

    def submit(self, job: Job, now: float) -> None:
        self.jobs[job.raw_id] = job
        if job.nnodes > 1 or job.gpus >= self.cfg.gpus_per_node:
            self.pending_big.append(job)
            self.big_sorted = False
        else:
            self.pending_small.append(job)

    def waiting(self, now: float) -> bool:
        """Whether a job that could have started before ``now`` is still waiting (one submitted at
        ``now`` has not been scheduled yet)."""
        return any(j.eligible < now for j in self.pending_big) or any(j.eligible < now for j in self.pending_small)

    # -- node bookkeeping ----------------------------------------------------
    def _set_free(self, node: int, value: int) -> None:
        if self.up[node]:
            old = self.free[node]
            self.buckets[old].discard(node)
            self.buckets[value].add(node)
            self.first[old] = self.first[value] = _UNKNOWN
            self.found.clear()
        self.free[node] = value

    def _take_down(self, node: int, now: float) -> None:
        if self.up[node]:
            self.buckets[self.free[node]].discard(node)
            self.first[self.free[node]] = _UNKNOWN
            self.found.clear()
            self.up[node] = False
            self.down_since[node] = now

    def _summarise(self, node: int) -> None:
        qos, newest, exempt, cost = -1, -np.inf, False, 0
        for raw_id in self.node_jobs[node]:
            j = self.jobs[raw_id]
            qos = max(qos, QOS_RANK[j.qos])
            newest = max(newest, j.start)
            exempt = exempt or j.preempted >= MAX_PREEMPTIONS
            cost += j.gpus
        self.node_qos[node], self.node_newest[node] = qos, newest
        self.node_exempt[node], self.node_cost[node] = exempt, cost

    def _summarise_with(self, node: int, job: Job) -> None:
        """_summarise once ``job`` started on ``node``: the other jobs there are as they were at their summary."""
        self.node_qos[node] = max(self.node_qos[node], QOS_RANK[job.qos])
        self.node_newest[node] = max(self.node_newest[node], job.start)
        self.node_exempt[node] = self.node_exempt[node] or job.preempted >= MAX_PREEMPTIONS
        self.node_cost[node] += job.gpus

    def repair(self, node: int) -> None:
        if not self.up[node]:
            self.up[node] = True
            self.buckets[self.free[node]].add(node)
            self.first[self.free[node]] = _UNKNOWN
            self.found.clear()

    # -- scheduling ------------------------------------------------------------
    def _allowed(self, job: Job, node: int) -> bool:
        return not job.exclude or self.cl.hosts[node] not in job.exclude

    def schedule(self, now: float) -> None:
        g = self.cfg.gpus_per_node
        if not self.big_sorted:  # a stable sort of a sorted list changes nothing
            self.pending_big.sort(key=lambda j: (-j.priority, j.eligible))
            self.big_sorted = True
        idle = self.buckets[g]
        for job in list(self.pending_big):
            if job.eligible > now:
                continue
            # how many idle nodes the job may use (which ones only once it starts: _pick sorts them); the
            # hosts it excludes only count when they could matter
            fits = len(idle)
            may_preempt = now - job.eligible >= 900 and now - job.last_preempt_try >= 600
            if job.exclude and (fits >= job.nnodes or may_preempt):
                fits -= self._excluded_in(job, idle)
            freed: list[int] = []
            # preempt only for a job that waited 15 minutes: many big jobs fit as others drain
            if fits < job.nnodes and may_preempt:
                job.last_preempt_try = now
                freed = self._preempt_for(job, now, job.nnodes - fits)
                fits = len(idle) - self._excluded_in(job, idle)
            if fits >= job.nnodes:
                self.pending_big.remove(job)
                chosen = self._pick(job, [n for n in idle if self._allowed(job, n)], freed)
                self.start(job, chosen, now)
        tries, found = 0, self.found
        for job in list(itertools.islice(self.pending_small, 200)):  # backfill window
            if job.eligible > now:
                continue
            # the first node, in the buckets' order, of the first bucket with room (_first_with; its usual answer
            # inline: this runs for every waiting job after every event)
            node = found.get(job.gpus, _UNKNOWN)
            if node is _UNKNOWN or (node is not None and job.exclude):
                node = self._first_with(job)
            if node is None and job.qos != "low" and tries < 3 and now - job.eligible >= 900 \
                    and now - job.last_preempt_try >= 600:
                tries += 1
                job.last_preempt_try = now
                node = self._preempt_scavengers(job, now)
            if node is not None:
                self.pending_small.remove(job)
                self.start(job, [node], now)

    def _excluded_in(self, job: Job, nodes: set[int]) -> int:
        return sum(1 for h in job.exclude if self.host_index.get(h) in nodes)

    def _first_with(self, job: Job) -> int | None:
        """What ``next(n for f in range(job.gpus, g + 1) for n in self.buckets[f] if self._allowed(job, n))``
        finds: the first node with room for any job of that size, unless the job excludes it; then the first
        it allows from each bucket's first few nodes (one more than a job excludes at most)."""
        node = self.found.get(job.gpus, _UNKNOWN)
        if node is _UNKNOWN:
            node = self.found[job.gpus] = next((head[0] for head in map(self._head, range(job.gpus, len(self.buckets)))
                                                if head), None)
        if node is None or not job.exclude or self.cl.hosts[node] not in job.exclude:
            return node
        if len(job.exclude) >= HEAD:
            return next((n for f in range(job.gpus, len(self.buckets)) for n in self.buckets[f]
                         if self._allowed(job, n)), None)
        return next((n for f in range(job.gpus, len(self.buckets)) for n in self._head(f)
                     if self.cl.hosts[n] not in job.exclude), None)

    def _head(self, f: int) -> list[int]:
        head = self.first[f]
        if head is _UNKNOWN:
            head = self.first[f] = list(itertools.islice(self.buckets[f], HEAD))
        return head

    def _pick(self, job: Job, whole: list[int], freed: list[int]) -> list[int]:
        whole = sorted(whole)
        # a crash loop keeps landing on its bad node; a job runs on the nodes it preempted jobs on (a
        # multi-node victim may free more than it needs)
        crash = [job.crash_node] if job.crash_left and job.crash_node in whole else []
        lead = list(dict.fromkeys(crash + sorted(freed)))
        if lead:
            return (lead + [n for n in whole if n not in lead])[: job.nnodes]
        first = int(self.rng.integers(0, max(1, len(whole) - job.nnodes + 1)))
        return whole[first:first + job.nnodes]  # contiguous ranges, as topology-aware placement gives

    def _preempt_for(self, job: Job, now: float, need: int) -> list[int]:
        """Free ``need`` whole nodes by preempting jobs of a lower QOS that ran
        at least ``preempt_after_h``: the nodes freed, none if that cannot be done."""
        # a job is preempted at most once (then exempt, like Slurm's PreemptExemptTime),
        # which keeps preemption from cascading through the requeued jobs
        ok = (self.up & (self.free < self.cfg.gpus_per_node) & (self.node_qos < QOS_RANK[job.qos])
              & (now - self.node_newest >= self.cfg.preempt_after_h * 3600) & ~self.node_exempt)
        ok[[self.host_index[h] for h in job.exclude if h in self.host_index]] = False
        nodes = np.flatnonzero(ok)
        if len(nodes) < need:
            return []
        chosen = [int(n) for n in nodes[np.lexsort((nodes, self.node_cost[nodes]))[:need]]]  # least GPUs lost
        victims = {j for node in chosen for j in self.node_jobs[node]}
        for raw_id in sorted(victims):
            self.jobs[raw_id].preempted += 1
            self.end(self.jobs[raw_id], now, "PREEMPTED", "0:0", "preempted", None, requeue=True,
                     preempted_by=f"{job.job_id}:{job.instance}")
        return chosen

    def _preempt_scavengers(self, job: Job, now: float) -> int | None:
        """A waiting normal job takes GPUs from low-QOS (scavenger) jobs that ran
        two hours: the node where that frees enough GPUs at the least cost."""
        min_run, best = self.cfg.preempt_after_h * 3600, None
        up, jobs, node_low, free = self.up, self.jobs, self.node_low, self.free
        for node in self.rng.permutation(self.cfg.nodes)[:256].tolist():  # sample: a full scan is too slow at scale
            if not node_low[node] or not up[node] or not self._allowed(job, node):
                continue
            victims = [v for v in map(jobs.__getitem__, node_low[node])
                       if now - v.start >= min_run and v.preempted < MAX_PREEMPTIONS]
            if not victims:
                continue
            gain = sum(v.per_node for v in victims)
            if free[node] + gain >= job.gpus and (best is None or gain < best[0]):
                best = (gain, node, victims)
        if best is None:
            return None
        for victim in sorted(best[2], key=lambda v: v.raw_id):
            victim.preempted += 1
            self.end(victim, now, "PREEMPTED", "0:0", "preempted", None, requeue=True,
                     preempted_by=f"{job.job_id}:{job.instance}")
        return best[1]

    def start(self, job: Job, nodes: list[int], now: float) -> None:
        job.start, job.nodes, job.token = now, nodes, job.token + 1
        for n in nodes:
            self._set_free(n, self.free[n] - job.per_node)
            self.node_jobs[n].add(job.raw_id)
            if job.qos == "low":
                self.node_low[n].add(job.raw_id)
            self._summarise_with(n, job)
        remaining = job.work - job.done
        run, state = min(remaining, job.limit), "COMPLETED"
        if job.outcome in ("fail", "cancel", "oom") and job.outcome_at - job.done < run:
            run, state = max(1.0, job.outcome_at - job.done), {"fail": "FAILED", "cancel": "CANCELLED", "oom": "OUT_OF_MEMORY"}[job.outcome]
        elif remaining > job.limit:
            state = "TIMEOUT"
        if job.crash_left and job.crash_node in nodes:
            crash = float(self.rng.uniform(300, 1200))
            if crash < run:
                self.push(now + crash, FAULT, (job.crash_node, job.raw_id))
        self.push(now + run, END, (job.raw_id, job.token, state))

    def end(self, job: Job, now: float, state: str, exit_code: str, cause: str, cause_host: str | None,
            requeue: bool = False, fault_time: float | None = None, preempted_by: str | None = None) -> None:
        for n in job.nodes:
            self._set_free(n, self.free[n] + job.per_node)
            self.node_jobs[n].discard(job.raw_id)
            self.node_low[n].discard(job.raw_id)
            self._summarise(n)
            ends = self.node_ends[n]
            ends.append(now)
            while ends and ends[0] < now - 8 * 3600:  # decoys look back at most 6 h
                ends.popleft()
        self.rec.instance(job, now, state, exit_code, cause, cause_host, fault_time, preempted_by)
        job.done += now - job.start
        job.token += 1
        if requeue:
            job.instance += 1
            job.start, job.nodes = -1.0, []
            job.eligible = now + float(self.rng.uniform(60, 300))
            self.submit(job, now)
        else:
            self.jobs.pop(job.raw_id, None)

    def finish(self, raw_id: int, token: int, state: str, now: float) -> None:
        job = self.jobs.get(raw_id)
        if job is None or job.token != token:
            return  # this instance already ended (preempted, failed)
        user_exit = pick(self.rng, USER_EXITS)  # drawn whatever the state: the random stream stays as it was
        exit_code = user_exit if state == "FAILED" else END_EXITS.get(state, "0:0")
        cause = {"FAILED": "user", "OUT_OF_MEMORY": "oom"}.get(state, "none")
        self.rec.job_end_extras(job, now, state)
        if state in ("FAILED", "COMPLETED") and self.rng.random() < 0.03:
            self._decoy(job, now)
        self.end(job, now, state, exit_code, cause, None)

    def _decoy(self, job: Job, now: float) -> None:
        """Place an alarming event where no attribution window reaches it:
        hours before this job's end on its node (when no job ended near then),
        or inside its window on a node that has been down for a while."""
        if self.rng.random() < 0.5:
            node = job.nodes[0]
            t = now - float(self.rng.uniform(2, 6)) * 3600
            if t > 0 and not any(t - 300 <= e <= t + 600 for e in self.node_ends[node]):
                self.rec.decoy(job, t, self.cl.hosts[node], "before_window")
            return
        t = now - float(self.rng.uniform(0, 300))
        down = [n for n in np.flatnonzero(~self.up) if self.down_since[n] < t - 900]
        if down:
            self.rec.decoy(job, t, self.cl.hosts[int(pick(self.rng, down))], "outside_job")

    # -- faults ----------------------------------------------------------------
    def fault(self, node: int, now: float, crash_job: int | None = None) -> None:
        """A hardware fault on ``node``: log it, end the jobs it kills, maybe drain."""
        lemon = self.cl.lemon.get(node)
        loop_job = self.jobs.get(crash_job) if crash_job is not None else None
        if crash_job is not None and (loop_job is None or node not in loop_job.nodes):
            return
        cause = F.BY_ID[loop_job.crash_cause] if loop_job else F.pick_cause(self.rng, LEMON_CAUSE.get(lemon), self.cfg.cause_mix)
        host = self.cl.hosts[node]
        # only jobs spanning nodes talk over the fabric: a fault seen only in job logs needs them all to
        multi = bool(self.node_jobs[node]) and all(self.jobs[j].nnodes > 1 for j in self.node_jobs[node])
        self.rec.fault_logs(node, now, cause, multi)
        victims = [self.jobs[j] for j in sorted(self.node_jobs[node])]
        # a crash loop goes on until its last round, when the node is finally drained
        drained = loop_job.crash_left <= 1 if loop_job else self.rng.random() < cause.drain
        check_at = self.cfg.by_horizon(now + float(self.rng.uniform(20, 240)))
        for job in victims:
            caught_first = drained and cause.node_fail == 0 and self.rng.random() < 0.5
            if caught_first:  # the health check fires first and automation requeues the job
                self.end(job, check_at, "REQUEUED", "0:0", cause.id, host, requeue=True, fault_time=now)
                continue
            state = "NODE_FAIL" if self.rng.random() < cause.node_fail else "FAILED"
            crash_at = self.cfg.by_horizon(now + float(self.rng.uniform(5, 240)))
            exit_code = "0:0" if state == "NODE_FAIL" else pick(self.rng, FAULT_EXITS)
            if job.requeue and not drained and not job.crash_left and self.rng.random() < 0.5:
                job.crash_node, job.crash_left, job.crash_cause = node, int(self.rng.integers(3, 12)), cause.id
            elif job.crash_left:
                job.crash_left -= 1
            self.rec.user_excludes(job, host)
            self.end(job, crash_at, state, exit_code, cause.id, host, requeue=job.requeue, fault_time=now)
        if drained or cause.node_fail == 1.0:
            self._take_down(node, now)
            # a lemon is back as soon as any node: repairs do not find its defect (Meta §IV-A), so it
            # keeps attracting jobs (longer repairs kept lemons out of service, their faults hitting no job)
            repair_h = float(self.rng.uniform(*cause.repair_h))
            back = now + repair_h * 3600
            self.rec.drain(node, now, check_at, back, cause, down=cause.node_fail == 1.0)
            self.push(back, REPAIR, node)

    def maintenance(self, node: int, back: float, now: float) -> None:
        """Planned maintenance: drain the node, requeue its jobs, bring it back later."""
        if not self.up[node]:
            return
        for raw_id in sorted(self.node_jobs[node]):
            self.end(self.jobs[raw_id], now, "REQUEUED", "0:0", "maintenance", None, requeue=True)
        self._take_down(node, now)
        self.rec.maintenance(node, now, back)
        self.push(back, REPAIR, node)
