"""Simulator settings and presets.

Rates follow Meta's study of its research clusters (Meta §III, docs/methods.md#papers):
hardware failures ~5-7 per 1,000 node-days of runtime, 1-2% lemon nodes,
job mix dominated by 1-GPU jobs by count and by 256+ GPU jobs by GPU time.
"""
from __future__ import annotations

from dataclasses import dataclass, field, replace
from datetime import datetime


@dataclass(frozen=True)
class SimConfig:
    nodes: int = 64
    days: int = 14
    seed: int = 1
    start: datetime = datetime(2024, 3, 1)
    gpus_per_node: int = 8
    nodes_per_rack: int = 16
    racks_per_pod: int = 8
    load: float = 0.95  # offered GPU demand / capacity (user failures and cancels end early, so less is used)
    # Meta's clusters are "fully loaded" (§II-C Observation 1; 83-85% utilisation, §II-A) and 10% of their
    # jobs are preempted (§III Fig. 3). Open Poisson arrivals at `load` leave the cluster idle whenever no
    # giant job happens to run, and preemption (which needs a full cluster) then comes and goes with a
    # handful of 512+ GPU jobs (0-12% by seed at 300 nodes, 2% at 2,000). So while no job waits, users
    # submit `fill_boost` times as fast: there is nearly always a queue, as on a real cluster.
    fill_boost: float = 2.0
    failure_rate: float = 6.0  # hardware faults per 1,000 node-days
    lemon_share: float = 0.015
    # A lemon's fault rate over a healthy node's. Meta's lemon detection cut
    # failures of 512+ GPU (64-node) jobs from 14% to 4% (§IV-A): with per-node
    # hazards h and m*h on a 1.5% share, -ln(1 - 0.14) = 64 h (1 + 0.015 (m - 1))
    # with lemons and -ln(1 - 0.04) = 64 h without give m = 1 + (3.70 - 1) / 0.015 = 180.
    lemon_multiplier: float = 180.0
    # job sizes in GPUs and their probability by count
    sizes: tuple[int, ...] = (1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024)
    size_probs: tuple[float, ...] = (0.47, 0.23, 0.225, 0.04, 0.012, 0.006, 0.004, 0.003, 0.0025, 0.0012, 0.0003)
    # median run time (hours) for a size class: small jobs are short, big ones long
    small_hours: float = 2.5
    big_hours: float = 30.0
    max_days: float = 7.0  # maximum job lifetime (TIMEOUT)
    preempt_after_h: float = 2.0
    # intended outcome shares of a job that is not preempted or hit by hardware
    user_fail: float = 0.25
    cancel: float = 0.035
    timeout: float = 0.006
    oom: float = 0.0012
    benchmark_every_days: int = 7
    telemetry_jobs: int = 3  # jobs a node fault ended, with the drift before it
    telemetry_healthy_jobs: int | None = None  # completed jobs with telemetry; None: 3x telemetry_jobs
    # how many of those have one machine running slow (fail-slow: Minder's main case); None: telemetry_jobs
    telemetry_slow_jobs: int | None = None
    malformed_lines: bool = True
    health_check_added_day: int = field(default=-1)  # -1: halfway through
    cause_mix: tuple[tuple[str, float], ...] = ()  # (cause id, weight) of non-lemon faults; empty: faults.CAUSES
    # Slurm's ClusterName, written in sacct's Cluster column (a fleet's clusters); None: no such column
    cluster: str | None = None
    # the share of the multi-node jobs (30+ minutes of training) that print per-rank step times, with an
    # iteration-time telemetry series and straggler truth (analysis/simulate/stragglers.py); 0: none, and
    # the output is what it was before stragglers
    straggler_jobs: float = 0.0
    # slurm: sacct dumps, drains and dmesg XIDs; kubernetes: the same history as JobSets, Kueue Workloads and
    # pods (kubernetes/) and NVSentinel XID events (node_health/), analysis/simulate/kubernetes.py
    scheduler: str = "slurm"

    @property
    def node_days(self) -> float:
        return self.nodes * self.days

    @property
    def horizon_s(self) -> float:
        """Seconds from ``start`` to the end of the simulated period: no file holds a time at or past it."""
        return self.days * 86400.0

    def by_horizon(self, t: float) -> float:
        """``t``, or the period's last second for a consequence that would land past it (a job a fault in
        the last minutes kills ends then, not in a day no file covers)."""
        return min(t, self.horizon_s - 1.0)


PRESETS = {
    # the demo: two weeks of 48 nodes would see ~4 faults at a real rate, so
    # it runs a fault-prone cluster that shows every failure kind
    "small": SimConfig(nodes=48, days=14, failure_rate=40.0),
    "rsc1": SimConfig(nodes=2000, days=30),
    # RSC-2: smaller, more vision jobs, fewer giant ones (Meta §III)
    "rsc2": SimConfig(nodes=1000, days=30, size_probs=(0.5, 0.22, 0.2, 0.05, 0.012, 0.007, 0.004, 0.003, 0.0015,
                                                          0.0004, 0.0001)),
}


def preset(name: str, **overrides) -> SimConfig:
    if name not in PRESETS:
        raise ValueError(f"unknown preset '{name}' (choose from {', '.join(PRESETS)})")
    return replace(PRESETS[name], **{k: v for k, v in overrides.items() if v is not None})
