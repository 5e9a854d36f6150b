"""Everything the simulated cluster writes: Slurm accounting, kernel and switch
logs, health checks, drains, tickets, and the ground truth beside them."""
from __future__ import annotations

import csv
import json
from collections import Counter
from pathlib import Path

import numpy as np

from analysis.simulate import faults as F
from analysis.simulate.cluster import GPU_BUS, Cluster
from analysis.simulate.joblogs import Case
from analysis.simulate.kubernetes import KubernetesLog, XidRouter
from analysis.simulate.stragglers import Candidate
from analysis.simulate.config import SimConfig
from analysis.simulate.draws import pick
from analysis.simulate.workload import Job, submit_line
from analysis.simulate.writers import (DailyLog, elapsed, health_line, health_parts, hostlist, iso, journal_line,
                                       sacct_header, switch_line)

INSTANCE_COLUMNS = ["job_id", "instance", "state", "cause", "cause_host", "fault_time", "start", "end", "gpus", "nodes",
                    "eligible", "preempted_by"]
STEP_STATE = {"PREEMPTED": "CANCELLED", "REQUEUED": "CANCELLED", "TIMEOUT": "CANCELLED",
              "OUT_OF_MEMORY": "OUT_OF_MEMORY", "NODE_FAIL": "CANCELLED"}


class Recorder:
    def __init__(self, cfg: SimConfig, cluster: Cluster, rng: np.random.Generator, out: Path):
        self.cfg, self.cl, self.rng, self.out, self.t0 = cfg, cluster, rng, out, cfg.start
        # the Kubernetes world writes the same history as objects and NVSentinel events (kubernetes.py)
        self.k8s = KubernetesLog(out, self.t0, cluster.hosts, cfg.seed) \
            if cfg.scheduler == "kubernetes" else None
        self.sacct = None if self.k8s else DailyLog(out / "slurm", "sacct-{date}.txt", self.t0,
                                                    header=sacct_header(cfg.cluster))
        self.kernel = DailyLog(out / "kernel", "kern-{date}.log", self.t0)
        if self.k8s:
            self.kernel = XidRouter(self.kernel, out, self.t0)
        self.switch = DailyLog(out / "switch", "switches-{date}.log", self.t0)
        self.health = DailyLog(out / "health", "health-{date}.jsonl", self.t0)
        # truth/job_instances.csv, written as the days are flushed: a year at 2,000 nodes has millions of rows
        self.instances: list[tuple] = []  # rows not written yet
        self.instance_count = 0
        self.states: Counter[str] = Counter()  # instances by state, in order of first appearance
        self._instances_file = None
        self.decoys: list[tuple] = []
        self.drains: list[tuple] = []
        self.tickets: list[tuple] = []
        self.faults: list[tuple] = []
        self.excluded: dict[str, list[str]] = {}
        self.telemetry_candidates: list[tuple] = []
        self.healthy_candidates: list[tuple] = []  # completed multi-node jobs: telemetry of normal running
        # job logs: what each fault looks like in the job's own output, from a stream of its own
        self.joblog_rng = np.random.default_rng([cfg.seed, 11])
        self.log_variant: dict[tuple[str, float], str] = {}  # (host, fault time) -> hang | fabric | link
        self.link_bursts: dict[str, list[float]] = {}  # host -> times of silent link faults (port counters)
        self.log_cases: list[Case] = []
        self.step_candidates: list[Candidate] = []  # multi-node instances that ended (stragglers.py)
        self._noise = F.NOISE.tolist()
        self._leaves = sorted(set(cluster.leaf))
        self._host_json = [json.dumps(h) for h in cluster.hosts]

    # -- Slurm accounting --------------------------------------------------------
    def _ts(self, t: float) -> str:
        return iso(self.t0, t)

    def instance(self, job: Job, end: float | None, state: str, exit_code: str, cause: str,
                 cause_host: str | None, fault_time: float | None, preempted_by: str | None = None) -> None:
        started = job.start >= 0
        hosts = [self.cl.hosts[n] for n in job.nodes]
        if self.k8s is not None:
            self.k8s.instance(job, end, state, exit_code, cause_host, fault_time)
        else:
            self._sacct(job, end, state, exit_code, hosts)
        end_s = self._ts(end) if end is not None and (started or state == "CANCELLED") else "Unknown"
        start_s = self._ts(job.start) if started else "Unknown"
        eligible_s = self._ts(job.eligible)
        self.instance_count += 1
        self.states[state] += 1
        self.instances.append((job.job_id, job.instance, state, cause, cause_host,
                               self._ts(fault_time) if fault_time is not None else "", start_s if started else "",
                               end_s if end is not None and started else "", job.gpus, job.nnodes,
                               eligible_s, preempted_by or ""))
        self._log_case(job, end, state, cause, cause_host, fault_time, hosts)
        if self.cfg.straggler_jobs > 0 and started and end is not None and job.nnodes > 1:
            self.step_candidates.append(Candidate(job.job_id, job.instance, sorted(hosts), job.per_node, job.start, end,
                                                  state, cause, cause_host, fault_time, job.done, job.work))
        if cause_host and job.nnodes >= 4 and fault_time is not None and end is not None:
            self.telemetry_candidates.append((job.job_id, list(hosts), job.start, end, cause_host, fault_time))
        elif state == "COMPLETED" and job.nnodes >= 4 and end is not None and started:
            self.healthy_candidates.append((job.job_id, list(hosts), job.start, end))

    def _sacct(self, job: Job, end: float | None, state: str, exit_code: str, hosts: list[str]) -> None:
        """The instance's sacct rows: the job's and its steps'."""
        started = job.start >= 0
        nodelist = hostlist(hosts) if hosts else "None assigned"
        run = elapsed(((end if end is not None else self.cfg.days * 86400.0) - job.start) if started else 0.0)
        end_s = self._ts(end) if end is not None and (started or state == "CANCELLED") else "Unknown"
        start_s = self._ts(job.start) if started else "Unknown"
        eligible_s = self._ts(job.eligible)
        tres = f"billing={job.gpus * 12},cpu={job.nnodes * 96},gres/gpu={job.gpus},mem={job.nnodes * 1800}G,node={job.nnodes}"
        lead = f"{self.cfg.cluster}|" if self.cfg.cluster else ""  # sacct prints Cluster on every row, steps too
        lines = [f"{lead}{job.job_id}|{job.raw_id}|{job.name}|{job.user}|{job.account}|learn|{job.qos}|{job.priority}|"
                 f"{state}|{exit_code}|{'None' if started else 'Priority'}|{self._ts(job.submit)}|"
                 f"{eligible_s}|{start_s}|{end_s}|{run}|{job.nnodes}|{tres}|{nodelist}|{job.instance}|"
                 f"{submit_line(job, self.cfg)}"]
        if started:
            step_state = STEP_STATE.get(state, state)
            times = f"{start_s}|{start_s}|{start_s}|{end_s}|{run}"
            for step, name, nodes in (("batch", "batch", hosts[:1]), ("extern", "extern", hosts), ("0", "python", hosts)):
                k = len(nodes)
                node_tres = f"cpu={96 * k},gres/gpu={job.per_node * k},mem={1800 * k}G,node={k}"
                st = "COMPLETED" if step == "extern" and state != "NODE_FAIL" else step_state
                # one host prints as itself; all of them as the job's node list
                names = nodes[0] if k == 1 else nodelist
                lines.append(f"{lead}{job.job_id}.{step}|{job.raw_id}.{step}|{name}||||||{st}|"
                             f"{exit_code if step != 'extern' else '0:0'}||{times}|{k}|{node_tres}|{names}||")
        when = end if end is not None else self.cfg.days * 86400 - 1
        self.sacct.add(when, "\n".join(lines))  # one entry: a stable sort kept the job's rows together anyway

    def _log_case(self, job: Job, end: float | None, state: str, cause: str, cause_host: str | None,
                  fault_time: float | None, hosts: list[str]) -> None:
        """Which instances leave a job log, and what it shows (analysis/simulate/joblogs.py)."""
        if end is None or job.start < 0:
            return
        variant = None
        if fault_time is not None and cause_host and state in ("FAILED", "NODE_FAIL"):
            variant = self.log_variant.get((cause_host, fault_time))
            if variant is None and cause == "gpu_memory" and self.joblog_rng.random() < 0.5:
                variant = "ecc"
        # a sample of the rest (a log costs ~8 ms to ingest; thousands per simulated month are plenty)
        elif state == "FAILED" and cause == "user" and self.joblog_rng.random() < 0.08:
            variant = "user"
        elif state == "COMPLETED" and job.nnodes > 1 and self.joblog_rng.random() < 0.03:
            variant = "ok"
        if variant:
            culprit = cause_host if variant in ("hang", "link", "ecc") else None
            # ranks follow Slurm's node list order (block distribution), not the order nodes were picked
            self.log_cases.append(Case(job.job_id, job.instance, sorted(hosts), job.per_node, job.start, end, state,
                                       variant, culprit))

    # -- kernel, switch and health logs --------------------------------------------
    def fault_logs(self, node: int, now: float, cause: F.Cause, multi: bool = False) -> None:
        host = self.cl.hosts[node]
        pid = int(self.rng.integers(1000, 4_000_000))
        # A silent link fault (half of the link faults under multi-node jobs only) leaves no kernel or
        # switch line: only job logs and port counters show it. Its lines are still drawn, so the main
        # random stream (and everything else the simulator writes) stays as it was.
        silent = cause.id == "infiniband_link" and multi and self.joblog_rng.random() < 0.5
        if silent:
            self.log_variant[(host, now)] = "link"
            self.link_bursts.setdefault(host, []).append(now)
        elif cause.id == "nccl_timeout":
            self.log_variant[(host, now)] = "fabric" if multi and self.joblog_rng.random() < 0.35 else "hang"
        # lines dated past the horizon had not been collected when the period ended: not written
        for offset, msg in F.kernel_lines(cause.id, self.rng, pid):
            if now + offset < self.cfg.horizon_s and not silent:
                self.kernel.add(now + offset, journal_line(self.t0, now + offset, host, msg))
        if cause.id == "infiniband_link":
            for offset, state in F.switch_flap(self.rng):
                if now + offset < self.cfg.horizon_s and not silent:
                    self.switch.add(now + offset, switch_line(self.t0, now + offset, self.cl.leaf[node], self.cl.port[node], state))
        self.faults.append((host, self._ts(now), cause.id, cause.hardware, bool(self.cl.lemon.get(node))))

    def job_end_extras(self, job: Job, now: float, state: str) -> None:
        """What a job's own end leaves in the logs: an application fault or the
        OOM killer; and, now and then, a decoy that must not be blamed."""
        host = self.cl.hosts[job.nodes[0]]
        pid = int(self.rng.integers(1000, 4_000_000))
        pci = f"0000:{GPU_BUS[int(self.rng.integers(0, 8))]}:00"
        if state == "FAILED" and self.rng.random() < 0.15:
            msg = pick(self.rng, F.USER_FAULT).format(pci=pci, pid=pid)
            t = now - float(self.rng.uniform(1, 30))
            self.kernel.add(t, journal_line(self.t0, t, host, msg))
        if state == "OUT_OF_MEMORY":
            for dt, msg in ((-3.0, "python invoked oom-killer: gfp_mask=0x140cca(GFP_HIGHUSER_MOVABLE|__GFP_COMP), order=0, oom_score_adj=0"),
                            (-2.9, f"Out of memory: Killed process {pid} (python) total-vm:812345678kB, anon-rss:1923456780kB, file-rss:0kB")):
                self.kernel.add(now + dt, journal_line(self.t0, now + dt, host, msg))

    def decoy(self, job: Job, t: float, host: str, why: str) -> None:
        """An alarming event that did not end ``job``: the engine picked a time
        and node no job's attribution window covers."""
        kind, code, template = F.DECOY[int(self.rng.integers(0, len(F.DECOY)))]
        pci = f"0000:{GPU_BUS[int(self.rng.integers(0, 8))]}:00"
        msg = template.format(pci=pci, pid=int(self.rng.integers(1000, 4_000_000)))
        self.kernel.add(t, journal_line(self.t0, t, host, msg))
        self.decoys.append((job.job_id, job.instance, host, self._ts(t), kind, code, why))

    def user_excludes(self, job: Job, host: str) -> None:
        """Users whose job a node killed often keep it out of their next jobs."""
        if self.rng.random() < 0.5:
            hosts = self.excluded.setdefault(job.user, [])
            if host not in hosts:
                hosts.append(host)
                del hosts[:-4]

    def drain(self, node: int, fault: float, check_at: float, back: float, cause: F.Cause, down: bool) -> None:
        host = self.cl.hosts[node]
        if cause.check:
            msg = {"gpu_count": "expected 8 GPUs, found 7", "gpu_ecc": "uncorrectable ECC errors / pending row remaps",
                   "pcie_link": "GPU link degraded to x8", "nvlink_status": "NVLink inactive links: 1",
                   "check_hw_ib": "mlx5_0 port 1 state DOWN", "check_fs_mount": "/checkpoint not mounted",
                   "dimm_health": "uncorrectable memory error on DIMM"}[cause.check]
            self.health.add(check_at, health_line(self.t0, check_at, host, cause.check, "critical", msg))
            reason = f"healthcheck: {cause.check}: {msg}"
        else:
            reason = "Not responding"
        state, user = ("DOWN", "slurm(64030)") if down else ("DRAIN", "root(0)")
        start = self.cfg.by_horizon(fault + 60) if down else check_at
        self.drains.append((host, start, back, state, reason, user))
        if self.rng.random() < 0.8:
            opened = start + float(self.rng.uniform(0.5, 4)) * 3600
            resolution = "no fault found" if self.rng.random() < 0.15 else f"replaced {cause.component}"
            self.tickets.append((f"T-{len(self.tickets) + 10001}", host, opened, back, cause.component, resolution))

    def maintenance(self, node: int, now: float, back: float) -> None:
        self.drains.append((self.cl.hosts[node], now, back, "DRAIN", "maintenance: firmware update", "admin(1001)"))

    def daily(self, day: int, up: np.ndarray) -> None:
        """Benign noise and the daily health sweep for one day."""
        base = day * 86400
        counts = self.rng.poisson(2.0, self.cfg.nodes)
        noise = self._noise
        for node in np.flatnonzero(counts).tolist():
            host, c = self.cl.hosts[node], counts[node]
            for t, k in zip(self.rng.uniform(0, 86400, c).tolist(), self.rng.integers(0, len(noise), c).tolist()):
                self.kernel.add(base + t, journal_line(self.t0, base + t, host, noise[k]))
        for leaf in self._leaves:
            t = base + float(self.rng.uniform(0, 86400))
            self.switch.add(t, f"{iso(self.t0, t, micro=True)}+00:00 {leaf} sshd[4121]: Accepted publickey for cumulus from 10.0.0.5 port 51122 ssh2")
        added = self.cfg.health_check_added_day if self.cfg.health_check_added_day >= 0 else self.cfg.days // 2
        t = base + 6 * 3600
        # the sweep's lines differ only in the host
        (head, count), ok, bad = (health_parts(self.t0, t, *check) for check in (
            ("gpu_count", "ok", "8 GPUs present"), ("gpu_row_remap", "ok", "no pending row remaps"),
            ("gpu_row_remap", "warning", "GPU3: 2 rows pending remap")))
        for node in np.flatnonzero(up).tolist():
            host = self._host_json[node]
            self.health.add(t, head + host + count)
            if day >= added:  # a check added mid-period sees a failure mode that was already there
                self.health.add(t, head + host + (bad if self.cl.lemon.get(node) == "gpu" else ok)[1])

    def flush(self, now: float | None = None) -> None:
        for log in (self.sacct or self.k8s.log, self.kernel, self.switch, self.health):
            log.flush(now)
        self._write_instances()

    def _write_instances(self) -> None:
        if self._instances_file is None:
            (self.out / "truth").mkdir(parents=True, exist_ok=True)
            self._instances_file = (self.out / "truth" / "job_instances.csv").open("w", newline="")
            self._instances_csv = csv.writer(self._instances_file)
            self._instances_csv.writerow(INSTANCE_COLUMNS)
        self._instances_csv.writerows(self.instances)
        self.instances.clear()

    def close_instances(self) -> None:
        """Write the instances still held and close truth/job_instances.csv."""
        self._write_instances()
        self._instances_file.close()
