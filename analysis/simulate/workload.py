"""Who submits what: users, job sizes, run times and the outcome each job is headed for."""
from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from analysis.simulate.config import SimConfig
from analysis.simulate.draws import Categorical, pick

NAMES_SMALL = ("eval", "sweep", "finetune", "notebook", "preprocess", "ablation", "probe", "tokenize")
NAMES_BIG = ("llm-pretrain", "mm-pretrain", "vision-pretrain", "speech-pretrain", "moe-pretrain")
PRIORITY = {"high": 90000, "normal": 50000, "low": 10000}
ACCOUNTS = ("llm", "vision", "speech", "rl", "infra", "nlp", "mm", "robotics")


@dataclass(slots=True, eq=False)  # one job is one object: queues remove it by identity, not field by field
class Job:
    raw_id: int  # JobIDRaw
    job_id: str  # JobID as sacct prints it (array tasks: base_task)
    user: str
    uid: int
    account: str
    qos: str
    name: str
    gpus: int
    nnodes: int
    per_node: int
    priority: int
    submit: float  # seconds since the simulation start
    work: float  # seconds of work to finish
    limit: float  # time limit of each instance, seconds
    outcome: str  # complete | fail | cancel | oom | timeout
    outcome_at: float  # work done when a fail/cancel/oom happens
    exclude: tuple[str, ...] = ()
    requeue: bool = False  # requeued by Slurm after a node failure (big jobs)
    instance: int = 0
    eligible: float = 0.0
    start: float = -1.0
    done: float = 0.0  # work done in earlier instances
    nodes: list[int] = field(default_factory=list)
    token: int = 0  # invalidates scheduled end events of a superseded instance
    crash_node: int = -1  # crash loop: the bad node this job keeps landing on
    crash_left: int = 0
    crash_cause: str = ""
    preempted: int = 0  # times preempted so far
    last_preempt_try: float = -1e18


def median_hours(cfg: SimConfig, gpus: np.ndarray) -> np.ndarray:
    alpha = math.log(cfg.big_hours / cfg.small_hours) / math.log(256)
    return cfg.small_hours * np.minimum(gpus, 256) ** alpha


def max_gpus(cfg: SimConfig) -> int:
    """No job asks for more than half the cluster."""
    return max(cfg.gpus_per_node, cfg.nodes // 2 * cfg.gpus_per_node)


def arrival_rate_per_s(cfg: SimConfig) -> float:
    sizes = np.minimum(np.array(cfg.sizes), max_gpus(cfg))
    probs = np.array(cfg.size_probs) / sum(cfg.size_probs)
    mean_h = median_hours(cfg, sizes) * math.exp(0.5)  # lognormal sigma 1
    demand = float(np.sum(probs * sizes * np.minimum(mean_h, cfg.max_days * 24)))  # GPU-hours per job
    capacity = cfg.nodes * cfg.gpus_per_node  # GPU-hours per hour
    return cfg.load * capacity / demand / 3600.0


def make_users(n: int) -> list[tuple[str, int, str]]:
    return [(f"user{i:03d}", 20000 + i, ACCOUNTS[i % len(ACCOUNTS)]) for i in range(n)]


class JobMaker:
    """New jobs for ``cfg``: who submits them (``users`` by ``weights``), their size, length and outcome. The
    distributions are set up once; each job takes the same draws in the same order as ever."""

    def __init__(self, cfg: SimConfig, users, weights):
        self.cfg, self.users = cfg, users
        self.sizes = [int(s) for s in cfg.sizes]
        self.size_p = Categorical(np.array(cfg.size_probs) / sum(cfg.size_probs))
        self.user_p = Categorical(weights)
        self.max_gpus = max_gpus(cfg)
        self.median: dict[int, float] = {}  # GPUs -> median hours, as median_hours computes it
        # the outcome's cumulative shares, summed in the order they always were
        self.cuts = (cfg.user_fail, cfg.user_fail + cfg.cancel, cfg.user_fail + cfg.cancel + cfg.timeout,
                     cfg.user_fail + cfg.cancel + cfg.timeout + cfg.oom)

    def __call__(self, rng: np.random.Generator, raw_id: int, now: float, excluded: dict[str, list[str]]) -> Job:
        cfg = self.cfg
        gpus = min(self.sizes[self.size_p.index(rng)], self.max_gpus)
        user, uid, account = self.users[self.user_p.index(rng)]
        median = self.median.get(gpus)
        if median is None:
            median = self.median[gpus] = float(median_hours(cfg, np.array([gpus]))[0])
        hours = median * math.exp(rng.normal(0, 1.0))
        work = max(60.0, hours * 3600)
        big = gpus >= 128
        qos = "high" if big else ("low" if rng.random() < 0.35 else "normal")
        priority = PRIORITY[qos] + gpus * 10
        u, (fail, cancel, timeout, oom) = rng.random(), self.cuts
        outcome = ("fail" if u < fail else "cancel" if u < cancel else "timeout" if u < timeout
                   else "oom" if u < oom else "complete")
        max_s = cfg.max_days * 86400
        limit = min(max_s, math.ceil(work * rng.uniform(1.3, 3.0) / 3600) * 3600)
        if outcome == "timeout":
            limit = min(max_s, max(3600.0, math.floor(work * rng.uniform(0.4, 0.9) / 3600) * 3600))
            work = max(work, limit + 600)
        elif work > max_s:
            outcome = "timeout"  # longer than the 7-day lifetime: Slurm ends it
        outcome_at = work * (rng.beta(0.6, 2.0) if outcome == "fail" else rng.uniform(0.05, 0.95))
        name = pick(rng, NAMES_BIG if gpus >= 64 else NAMES_SMALL)
        return Job(raw_id=raw_id, job_id=str(raw_id), user=user, uid=uid, account=account, qos=qos, name=name,
                   gpus=gpus, nnodes=max(1, gpus // cfg.gpus_per_node), per_node=min(gpus, cfg.gpus_per_node),
                   priority=priority, submit=now, work=work, limit=limit, outcome=outcome, outcome_at=outcome_at,
                   exclude=tuple(excluded.get(user, ())), requeue=big, eligible=now)


def submit_line(job: Job, cfg: SimConfig) -> str:
    parts = ["sbatch", f"--job-name={job.name}", f"--nodes={job.nnodes}", f"--gres=gpu:{job.per_node}",
             f"--time={int(job.limit // 3600)}:00:00", f"--qos={job.qos}"]
    if job.requeue:
        parts.append("--requeue")
    if job.exclude:
        parts.append(f"--exclude={','.join(job.exclude)}")
    parts.append(f"{job.name}.sh")
    return " ".join(parts)
