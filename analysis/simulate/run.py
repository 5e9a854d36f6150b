"""Run the cluster simulation and write a goodput source directory plus truth/."""
from __future__ import annotations

import heapq
import json
import time
from dataclasses import asdict
from pathlib import Path
from typing import Callable

import numpy as np

from analysis.simulate import files
from analysis.simulate.cluster import build_cluster
from analysis.simulate.config import SimConfig
from analysis.simulate.engine import END, FAULT, MAINT, REPAIR, SUBMIT, Engine
from analysis.simulate.recorder import Recorder
from analysis.simulate.workload import JobMaker, arrival_rate_per_s, make_users


def simulate(cfg: SimConfig, out: Path, progress: Callable[[str], None] | None = None) -> dict:
    """Simulate ``cfg`` into ``out`` (which must be empty or absent); returns the summary."""
    out = Path(out)
    if out.exists() and any(out.iterdir()):
        raise FileExistsError(f"{out} is not empty: simulate into a new directory")
    if cfg.scheduler not in ("slurm", "kubernetes"):
        raise ValueError(f"unknown scheduler '{cfg.scheduler}' (slurm or kubernetes)")
    out.mkdir(parents=True, exist_ok=True)
    t_wall = time.perf_counter()
    rng = np.random.default_rng(cfg.seed)
    cluster = build_cluster(cfg, rng)
    rec = Recorder(cfg, cluster, rng, out)
    eng = Engine(cfg, cluster, rng, rec)
    users = make_users(max(8, cfg.nodes // 8))
    weights = 1.0 / np.arange(1, len(users) + 1) ** 0.8
    weights /= weights.sum()
    new_job = JobMaker(cfg, users, weights)
    rate = arrival_rate_per_s(cfg)
    # the fleet-wide rate stays cfg.failure_rate whatever share of it the lemons take
    share = len(cluster.lemon) / cfg.nodes
    base_fault = cfg.failure_rate / 1000 / 86400 / (1 + share * (cfg.lemon_multiplier - 1))
    fault_rate = np.array([base_fault * (cfg.lemon_multiplier if i in cluster.lemon else 1.0) for i in range(cfg.nodes)])
    horizon = cfg.days * 86400.0
    eng.push(float(rng.exponential(1 / rate)), SUBMIT, None)
    for node in range(cfg.nodes):
        eng.push(float(rng.exponential(1 / fault_rate[node])), FAULT, (node, None))
    next_raw, day = 1_000_000, 0
    while eng.events:
        t, _, kind, payload = heapq.heappop(eng.events)
        if t >= horizon:
            break
        while t >= day * 86400:
            _new_day(eng, rec, rng, day)
            rec.flush(day * 86400)
            if progress and day % 5 == 0:
                progress(f"day {day}/{cfg.days}: {rec.instance_count:,} job instances, {len(eng.jobs):,} in the system")
            day += 1
        if kind == SUBMIT:
            for job in _arrivals(cfg, rng, new_job, next_raw, t, rec.excluded):
                eng.submit(job, t)
                next_raw = max(next_raw, job.raw_id + 1)
            boost = 1.0 if eng.waiting(t) else cfg.fill_boost  # an empty queue draws submissions
            eng.push(t + float(rng.exponential(1 / (rate * boost))), SUBMIT, None)
        elif kind == END:
            eng.finish(*payload, t)
        elif kind == FAULT:
            node, crash_job = payload
            eng.fault(node, t, crash_job)
            if crash_job is None:
                eng.push(t + float(rng.exponential(1 / fault_rate[node])), FAULT, (node, None))
        elif kind == REPAIR:
            eng.repair(payload)
        elif kind == MAINT:
            eng.maintenance(*payload, t)
        eng.schedule(t)
    while day < cfg.days:
        _new_day(eng, rec, rng, day)
        day += 1
    for job in sorted(eng.jobs.values(), key=lambda j: j.raw_id):  # still running or waiting at the end
        rec.instance(job, None, "RUNNING" if job.start >= 0 else "PENDING", "0:0", "none", None, None)
    rec.flush(None)
    summary = files.write_all(cfg, cluster, rec, out, rng)
    # a fleet's cluster names itself; a single cluster's summary stays as it was before fleets
    # (nor stragglers, when off)
    config = {k: str(v) for k, v in asdict(cfg).items()
              if not (k == "cluster" and v is None) and not (k == "straggler_jobs" and not v)
              and not (k == "scheduler" and v == "slurm")}
    summary.update(config=config, wall_s=round(time.perf_counter() - t_wall, 2))
    (out / "truth" / "summary.json").write_text(json.dumps(summary, indent=2))
    return summary


def _new_day(eng: Engine, rec: Recorder, rng: np.random.Generator, day: int) -> None:
    rec.daily(day, eng.up)
    if rec.k8s is not None:  # no random draw: the Slurm world's stream stays as it was
        rec.k8s.catch_up(eng.jobs.values())
    # a few nodes a day go down for planned maintenance; their jobs are requeued
    for node in rng.choice(eng.cfg.nodes, size=min(eng.cfg.nodes, rng.poisson(eng.cfg.nodes * 0.02)), replace=False):
        now = day * 86400 + float(rng.uniform(8, 16)) * 3600
        eng.push(now, MAINT, (int(node), now + float(rng.uniform(2, 8)) * 3600))


def _arrivals(cfg, rng, new_job: JobMaker, next_raw, t, excluded):
    """One submission: a job, or now and then an array of small tasks."""
    job = new_job(rng, next_raw, t, excluded)
    if job.gpus >= cfg.gpus_per_node or rng.random() > 0.03:
        return [job]
    tasks = []
    for k in range(int(rng.integers(3, 9))):
        task = new_job(rng, next_raw + k, t, excluded)
        task.gpus, task.per_node, task.nnodes, task.user, task.name = job.gpus, job.per_node, 1, job.user, "sweep"
        task.job_id = f"{next_raw}_{k}"
        tasks.append(task)
    return tasks
