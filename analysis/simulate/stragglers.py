"""Stragglers (issue 32): per-rank step times of a share of the multi-node jobs, in the job's own log and in its
telemetry, with the truth (docs/simulator.md#stragglers).

Off unless ``SimConfig.straggler_jobs`` > 0 (the share of the multi-node jobs picked); everything here draws from
random streams of its own, so the rest of the output stays as it was. A picked job runs torchtitan: every
``log_freq`` (k) steps each rank prints the step's mean tokens per second (tps) over those k steps; a rank's step
time is its own time for the step (a per-rank timer around forward/backward/optimizer, not the time it then
waits on its peers), and the job's step is the slowest rank's (What-if analysis, OSDI'25). The simulation's unit
is one log line: within it a rank's step time is constant, ``local_batch * seq_len / tps`` exactly (the printed
tps is an integer and the step time is defined from it).

Per job one scenario (none, persistent, transient, multiple, placement, job_skew), plus the cluster's slow nodes
(straggling in every picked job they run in) and job-wide slowdowns (checkpoints, storage stalls: every rank at
once, no straggler). Each instance (a requeue is a new instance, on other hosts; a job-side skew stays with its
ranks) is modelled over a window: the whole instance when it fits its lines (LINES_PER_INSTANCE, at most
MAX_LINES per rank), else its last stretch. Vectorised numpy per instance.
"""
from __future__ import annotations

import csv
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from pathlib import Path

import numpy as np
import polars as pl

from analysis.simulate.config import SimConfig
from analysis.simulate.joblogs import Case
from analysis.simulate.writers import iso

MIN_SPAN_S = 1800.0  # an instance needs 30 minutes of training steps to be picked
LINES_PER_INSTANCE = 12_000  # log lines per instance (all ranks) ...
MIN_LINES, MAX_LINES = 60, 750  # ... and per rank, whatever the job's size
MAX_INSTANCES = 4  # modelled per job (requeues, crash loops): at most 3,000 lines per rank
TELEMETRY_S = 10  # one iteration_time_seconds sample per host every 10 s
METRIC = "iteration_time_seconds"
PEAK_TFLOPS = 312.0  # A100 bf16 dense: torchtitan's mfu denominator
GPU_GIB = 79.15
SCENARIOS = ("none", "persistent", "transient", "multiple", "placement", "job_skew")
WEIGHTS = np.array([0.45, 0.12, 0.12, 0.1, 0.09, 0.12])  # most jobs run at one pace
SLOW_NODE_SHARE = 0.02  # of the cluster's nodes (at least 2)
TRUTH_COLUMNS = ["job_id", "instance", "host", "ranks", "start", "end", "slowdown", "kind", "origin", "cost_seconds"]


@dataclass
class Candidate:
    """A multi-node instance that ended (the Recorder's hook)."""
    job_id: str
    instance: int
    hosts: list[str]  # sorted: ranks follow Slurm's node list (block distribution)
    per_node: int
    start: float
    end: float
    state: str
    cause: str
    cause_host: str | None
    fault_time: float | None
    done: float  # seconds of work done by earlier instances
    work: float  # the job's total work, seconds


@dataclass
class Episode:
    ranks: np.ndarray  # global ranks (one host's, a stage's or one rank)
    i0: int  # first and last log interval (inclusive)
    i1: int
    factor: float  # the slowdown applied
    kind: str
    origin: str  # node | job


@dataclass
class JobPlan:
    index: int
    job_id: str
    scenario: str
    local_batch: int
    seq_len: int
    s0: float  # nominal step seconds
    k: int  # log_freq
    tflops: float  # nominal per GPU
    mem: float  # GiB
    skew_ranks: np.ndarray | None = None
    skew_factor: float = 1.0

    @property
    def tokens(self) -> int:
        return self.local_batch * self.seq_len


@dataclass
class InstanceSteps:
    """One instance's modelled steps: what its log prints, its telemetry and its truth."""
    job_id: str
    instance: int
    hosts: list[str]
    per_node: int
    t_origin: datetime
    plan: JobPlan
    train_start: float  # seconds since the simulation start: "Training starts at step N"
    start_step: int
    total_steps: int
    first_step: int  # the first step of the window's first line
    starts: np.ndarray  # (L,) log interval start / end, seconds since the simulation start
    ends: np.ndarray
    step: np.ndarray  # (L, n) seconds per step of each rank = tokens / tps
    tps: np.ndarray  # (L, n) int
    loss: np.ndarray  # (L,)
    mem: np.ndarray  # (n,)
    episodes: list[Episode]
    slowdowns: list[tuple[int, int, float, str]]  # job-wide: i0, i1, factor, kind
    truth: list[tuple] = field(default_factory=list)

    @property
    def steps_printed(self) -> np.ndarray:
        return self.first_step - 1 + self.plan.k * np.arange(1, len(self.ends) + 1)

    def _stamp(self, t: float) -> str:
        dt = self.t_origin + timedelta(seconds=float(t))
        return f"{dt:%Y-%m-%d %H:%M:%S},{dt.microsecond // 1000:03d}"

    def log_lines(self, pre) -> list[str]:
        """torchtitan's lines: the config line on rank 0, then one line per rank per log interval."""
        p, n = self.plan, self.step.shape[1]
        out = [f"{pre(0)}[rank0]:[titan] {self._stamp(self.train_start)} - root - INFO - Training starts at step "
               f"{self.start_step}, with local batch size {p.local_batch}, global batch size {p.local_batch * n}, "
               f"sequence length {p.seq_len}, total steps {self.total_steps} (warmup 2000)"]
        heads = [f"{pre(r)}[rank{r}]:[titan] " for r in range(n)]
        mems = [f"  memory: {m:5.2f}GiB({m / GPU_GIB * 100:.2f}%)  tps: " for m in self.mem]
        fpt = p.tflops * 1e12 * p.s0 / p.tokens  # flops per token
        tflops = self.tps * (fpt / 1e12)
        mfu = tflops * (100 / PEAK_TFLOPS)
        for j, (t, s, loss) in enumerate(zip(self.ends, self.steps_printed, self.loss)):
            mid = f" - root - INFO - step: {s:2d}  loss: {loss:7.4f}"
            stamp = self._stamp(t)
            tj, fj, mj = self.tps[j].tolist(), tflops[j].tolist(), mfu[j].tolist()
            out += [f"{heads[r]}{stamp}{mid}{mems[r]}{tj[r]:,}  tflops: {fj[r]:,.2f}  mfu: {mj[r]:.2f}%"
                    for r in range(n)]
        return out

    def telemetry(self) -> tuple[np.ndarray, np.ndarray]:
        """(sample times (m,), values (m, hosts)): each host's mean step time (its slowest rank's) over the
        steps of the 10 s before each sample, the job's steps passing at the job's pace."""
        k, L = self.plan.k, len(self.ends)
        host_step = self.step.reshape(L, len(self.hosts), self.per_node).max(axis=2)
        first = np.ceil((self.starts[0] + TELEMETRY_S) / TELEMETRY_S) * TELEMETRY_S
        t = np.arange(first, self.ends[-1] + 1e-9, TELEMETRY_S)
        bounds = np.concatenate([self.starts[:1], self.ends])
        dur = self.ends - self.starts
        g_bounds = np.vstack([np.zeros((1, host_step.shape[1])), np.cumsum(k * host_step, axis=0)])

        def cum(x):  # cumulative steps and per-host step seconds at times x
            j = np.clip(np.searchsorted(bounds, x, side="right") - 1, 0, L - 1)
            frac = np.clip((x - bounds[j]) / dur[j], 0.0, 1.0) * k
            return k * j + frac, g_bounds[j] + frac[:, None] * host_step[j]

        n1, g1 = cum(t)
        n0, g0 = cum(t - TELEMETRY_S)
        return t, np.round((g1 - g0) / (n1 - n0)[:, None], 6)


def _nice_k(s0: float) -> int:
    return 20 if s0 < 2.5 else 10 if s0 < 4.5 else 5


def _job_plan(index: int, job_id: str, cfg: SimConfig, multi: bool, nnodes: int, per_node: int) -> JobPlan:
    rng = np.random.default_rng([cfg.seed, 23, index])
    w = WEIGHTS.copy()
    if multi:  # a skew that moves with its ranks shows best over requeues
        w[SCENARIOS.index("job_skew")] *= 3
    scenario = SCENARIOS[int(rng.choice(len(SCENARIOS), p=w / w.sum()))]
    if scenario == "multiple" and nnodes < 3:  # two stragglers and no peer left: one, to the end
        scenario = "persistent"
    s0 = float(rng.uniform(1.5, 6.0))
    plan = JobPlan(index, job_id, scenario, int(rng.choice([2, 4, 8])), int(rng.choice([2048, 4096, 8192])),
                   s0, _nice_k(s0), float(rng.uniform(110, 170)), float(rng.uniform(40, 74)))
    if scenario == "job_skew":
        if nnodes >= 3 and rng.random() < 0.5:  # a pipeline stage: a block of ranks (one host's worth)
            b = int(rng.integers(nnodes))
            plan.skew_ranks = np.arange(b * per_node, (b + 1) * per_node)
        else:  # one rank (data skew: its shard's samples are longer)
            plan.skew_ranks = np.array([int(rng.integers(nnodes * per_node))])
        plan.skew_factor = float(rng.uniform(1.15, 1.6))
    return plan


def _span(c: Candidate, variant: str | None, rng: np.random.Generator) -> tuple[float, float]:
    """When the instance trains: after its start-up, to a little before it ended (before a hang's watchdog
    timeout, before the fault that ended it)."""
    train_start = c.start + float(rng.uniform(30, 120))
    stop = min(c.end, c.fault_time) if c.fault_time is not None else c.end
    tail = 1805.0 + float(rng.uniform(0, 30)) if variant in ("hang", "fabric") else float(rng.uniform(5, 30))
    return train_start, stop - tail


def _host_ranks(h: int, per_node: int) -> np.ndarray:
    return np.arange(h * per_node, (h + 1) * per_node)


def _model(c: Candidate, train_start: float, step_end: float, rng: np.random.Generator, plan: JobPlan,
           slow: dict[str, float], cfg: SimConfig) -> InstanceSteps | None:
    k, s0, hosts, per = plan.k, plan.s0, c.hosts, c.per_node
    H, n = len(hosts), len(hosts) * per
    nominal = k * s0
    l_nom = int((step_end - train_start) // nominal)
    l_max = int(np.clip(LINES_PER_INSTANCE // n, MIN_LINES, MAX_LINES))
    L = min(l_nom, l_max)
    whole = L == l_nom
    # job-wide slowdowns: checkpoints (one line's interval, the save's seconds on top) and storage stalls
    wide = np.ones(L)
    slowdowns: list[tuple[int, int, float, str]] = []
    every = max(2, int(float(rng.uniform(1800, 5400)) / nominal))
    for i in range(int(rng.integers(0, every)), L, every):
        f = 1 + float(rng.uniform(20, 120)) / nominal
        wide[i] *= f
        slowdowns.append((i, i, f, "checkpoint"))
    if rng.random() < 0.5:
        for _ in range(int(rng.integers(1, 3))):
            f = float(rng.uniform(1.3, 2.5))
            length = max(1, round(float(rng.uniform(120, 600)) / (nominal * f)))  # 2-10 minutes of wall time
            i0 = int(rng.integers(0, max(1, L - length)))
            wide[i0:i0 + length] *= f
            slowdowns.append((i0, min(L, i0 + length) - 1, f, "storage"))
    # stragglers: the slow nodes here, then the job's scenario on the other hosts
    episodes = [Episode(_host_ranks(h, per), 0, L - 1, slow[hosts[h]], "placement", "node")
                for h in range(H) if hosts[h] in slow]
    free = [h for h in range(H) if hosts[h] not in slow]
    sc = plan.scenario

    def pick(m: int) -> list[int]:  # m hosts of the free ones, at least one host left as the peers
        return [free[int(i)] for i in rng.choice(len(free), size=m, replace=False)] if len(free) > m else []

    if sc == "persistent":
        for h in pick(1):
            episodes.append(Episode(_host_ranks(h, per), int(L * rng.uniform(0.15, 0.75)), L - 1,
                                    float(rng.uniform(1.2, 2.0)), "persistent", "node"))
    elif sc == "transient":
        for h in pick(int(rng.integers(1, 3))):
            f = float(rng.uniform(1.3, 3.0))  # the job waits on it: 3-15 minutes of wall time
            length = max(3, min(L // 2, round(float(rng.uniform(180, 900)) / (nominal * f))))
            i0 = int(rng.integers(2, max(3, int(0.7 * L) - length)))
            episodes.append(Episode(_host_ranks(h, per), i0, i0 + length - 1, f, "transient", "node"))
    elif sc == "multiple":
        chosen = pick(int(rng.integers(2, 4))) or pick(2)
        length = max(6, int(L * rng.uniform(0.15, 0.4)))
        c0 = int(L * rng.uniform(0.1, 0.45))
        for h in chosen:
            a = max(0, c0 + int(rng.integers(-length // 5, length // 5 + 1)))
            b = min(L - 1, a + length + int(rng.integers(-length // 5, length // 5 + 1)))
            episodes.append(Episode(_host_ranks(h, per), a, b, float(rng.uniform(1.2, 2.0)), "multiple", "node"))
    elif sc == "placement":
        for h in pick(1):
            episodes.append(Episode(_host_ranks(h, per), 0, L - 1, float(rng.uniform(1.1, 1.5)), "placement", "node"))
    elif sc == "job_skew":
        episodes.append(Episode(plan.skew_ranks, 0, L - 1, plan.skew_factor, "job_skew", "job"))
    factor = np.ones((L, n))
    for e in episodes:
        factor[e.i0:e.i1 + 1, e.ranks] *= e.factor
    # noise: per rank a constant bias, per host and step a shared part, per rank and step its own
    bias = np.exp(rng.normal(0, 0.004, n))
    host_noise = np.exp(rng.normal(0, 0.008, (L, H)))
    rank_noise = np.exp(rng.normal(0, 0.012, (L, n)))
    cont = s0 * wide[:, None] * factor * bias[None, :] * np.repeat(host_noise, per, axis=1) * rank_noise
    tps = np.maximum(1, np.rint(plan.tokens / cont)).astype(np.int64)
    step = plan.tokens / tps
    dur = k * step.max(axis=1)
    if whole:  # from the first step, as many lines as end before the instance stops training
        ends = train_start + np.cumsum(dur)
        lo, hi = 0, int(np.searchsorted(ends, step_end, side="right"))
    else:  # its last stretch, ending at its last step (less its first lines if they would start too early)
        suffix = np.cumsum(dur[::-1])[::-1]  # from each line to the last
        lo, hi = int(np.argmax(suffix <= step_end - train_start)), L
        ends = np.full(L, np.nan)
        ends[lo:] = step_end - suffix[lo] + np.cumsum(dur[lo:])
    if hi - lo < 10:
        return None
    ends, step, tps, dur = ends[lo:hi], step[lo:hi], tps[lo:hi], dur[lo:hi]
    starts = ends - dur
    L = hi - lo
    clip = lambda a, b: (max(a - lo, 0), min(b - lo, L - 1))  # noqa: E731
    kept = []
    for e in episodes:
        a, b = clip(e.i0, e.i1)
        if a <= b:
            kept.append(Episode(e.ranks, a, b, e.factor, e.kind, e.origin))
    slowdowns = [(*clip(a, b), f, kind) for a, b, f, kind in slowdowns if clip(a, b)[0] <= clip(a, b)[1]]
    start_step = 1 + k * int(c.done * 0.97 / nominal)
    before = 0 if whole else int(round((starts[0] - train_start) / nominal))
    first_step = start_step + k * before
    total = max(first_step + k * L, 1 + k * int(np.ceil(c.work / nominal)))
    steps_glob = first_step - 1 + k * np.arange(1, L + 1)
    loss = 1.9 + 6.0 * np.exp(-steps_glob / 4000.0) + rng.normal(0, 0.02, L)
    mem = plan.mem + rng.uniform(-1.0, 1.0, n)
    out = InstanceSteps(c.job_id, c.instance, hosts, per, cfg.start, plan, train_start, start_step, int(total),
                        first_step, starts, ends, step, tps, loss, mem, kept, slowdowns)
    out.truth = _truth(out)
    return out


def episode_costs(step: np.ndarray, k: int, episodes: list[tuple[np.ndarray, int, int]]) -> tuple[np.ndarray, np.ndarray]:
    """(cost seconds, slowdown) per episode (ranks, first, last interval) from the step times (L, n): at each
    interval the job waits for its slowest rank; at its peers' pace (the ranks in no episode then) it would
    have taken their slowest's time. The difference, k steps per line, is shared by the episodes active there.
    Slowdown: the median over the episode's lines of its slowest rank over its peers' median."""
    L, n = step.shape
    active = np.zeros((len(episodes), L), dtype=bool)
    member = np.zeros((len(episodes), n), dtype=bool)
    for i, (ranks, a, b) in enumerate(episodes):
        active[i, a:b + 1] = True
        member[i, ranks] = True
    straggling = (active.T.astype(np.int64) @ member.astype(np.int64)) > 0  # (L, n)
    peers = np.where(straggling, np.nan, step)
    has_peers = ~straggling.all(axis=1)
    job_step = step.max(axis=1)
    peers_max = np.where(has_peers, np.nanmax(np.where(has_peers[:, None], peers, 0.0), axis=1), job_step)
    peers_med = np.where(has_peers, np.nanmedian(np.where(has_peers[:, None], peers, 1.0), axis=1), np.nan)
    wait = k * (job_step - peers_max)
    n_active = np.maximum(active.sum(axis=0), 1)
    cost = (active * (wait / n_active)[None, :]).sum(axis=1)
    slowdown = np.array([np.nanmedian(step[a:b + 1][:, ranks].max(axis=1) / peers_med[a:b + 1])
                         for ranks, a, b in episodes]) if episodes else np.zeros(0)
    return cost, slowdown


def ranks_text(ranks: np.ndarray) -> str:
    lo, hi = int(ranks.min()), int(ranks.max())
    return str(lo) if lo == hi else f"{lo}-{hi}"


def _truth(s: InstanceSteps) -> list[tuple]:
    cost, slowdown = episode_costs(s.step, s.plan.k, [(e.ranks, e.i0, e.i1) for e in s.episodes])
    ts = lambda t: iso(s.t_origin, float(t), micro=True)  # noqa: E731
    return [(s.job_id, s.instance, s.hosts[int(e.ranks[0]) // s.per_node], ranks_text(e.ranks), ts(s.starts[e.i0]),
             ts(s.ends[e.i1]), round(float(sd), 4), e.kind, e.origin, round(float(co), 6))
            for e, co, sd in zip(s.episodes, cost, slowdown)]


def _slow_nodes(jobs: dict[str, list[Candidate]], rng: np.random.Generator, n_nodes: int) -> dict[str, float]:
    """A few nodes slow in every picked job they run in: picked among the hosts of two or more picked jobs, no
    instance getting more than (nodes - 1) // 2 of them (its peers stay the majority)."""
    host_jobs: dict[str, set[str]] = {}
    for job_id, insts in jobs.items():
        for c in insts:
            for h in c.hosts:
                host_jobs.setdefault(h, set()).add(job_id)
    want = max(2, round(SLOW_NODE_SHARE * n_nodes))
    pool = sorted(h for h, js in host_jobs.items() if len(js) >= 2)
    chosen: list[str] = []
    for i in rng.permutation(len(pool)):
        h = pool[int(i)]
        ok = all(sum(x in chosen for x in c.hosts) + 1 <= max(1, (len(c.hosts) - 1) // 2)
                 for insts in jobs.values() for c in insts if h in c.hosts)
        if ok:
            chosen.append(h)
        if len(chosen) == want:
            break
    return {h: round(float(rng.uniform(1.15, 1.6)), 3) for h in sorted(chosen)}


def plan(cfg: SimConfig, candidates: list[Candidate], cases: list[Case], taken: set[str]):
    """Pick the jobs, model their instances. -> (instances, slow nodes, the new job-log cases): existing cases
    of a picked instance get its steps; an instance without one gets a case of its own (variant ``steps``)."""
    rng = np.random.default_rng([cfg.seed, 23])
    by_case = {(c.job_id, c.instance): c for c in cases}
    jobs: dict[str, list[Candidate]] = {}
    for c in candidates:
        if c.job_id not in taken and c.end - c.start >= MIN_SPAN_S:
            jobs.setdefault(c.job_id, []).append(c)
    order = sorted(jobs, key=lambda j: (len(j), j))
    # each instance's training span, from a stream of its own: 30 minutes of it or the instance is not modelled
    spans: dict[str, list[tuple]] = {}
    for index, job_id in enumerate(order):
        for c in sorted(jobs[job_id], key=lambda c: c.instance):
            case = by_case.get((c.job_id, c.instance))
            r = np.random.default_rng([cfg.seed, 23, index, c.instance])
            a, b = _span(c, case.variant if case else None, r)
            if b - a >= MIN_SPAN_S and len(spans.get(job_id, ())) < MAX_INSTANCES:
                spans.setdefault(job_id, []).append((c, case, a, b, r))
    picked = {j: [x[0] for x in spans[j]] for j in order if rng.random() < cfg.straggler_jobs and j in spans}
    slow = _slow_nodes(picked, rng, cfg.nodes)
    models: list[InstanceSteps] = []
    new_cases: list[Case] = []
    for index, job_id in enumerate(order):
        if job_id not in picked:
            continue
        first = picked[job_id][0]
        p = _job_plan(index, job_id, cfg, len(picked[job_id]) >= 2, len(first.hosts), first.per_node)
        for c, case, train_start, step_end, r in spans[job_id]:
            m = _model(c, train_start, step_end, r, p, slow, cfg)
            if m is None:
                continue
            models.append(m)
            if case is None:
                blame = c.cause_host if c.state in ("FAILED", "NODE_FAIL") and c.fault_time is not None else None
                case = Case(c.job_id, c.instance, c.hosts, c.per_node, c.start, c.end, c.state, "steps", blame)
                new_cases.append(case)
            case.steps = m
    return models, slow, new_cases


def write(out: Path, cfg: SimConfig, models: list[InstanceSteps], slow: dict[str, float]) -> dict:
    """telemetry/job-<id>.parquet (iteration_time_seconds per host) and the truth: stragglers.csv,
    slow_nodes.csv, job_slowdowns.csv."""
    folder = out / "telemetry"
    folder.mkdir(parents=True, exist_ok=True)
    by_job: dict[str, list[InstanceSteps]] = {}
    for m in models:
        by_job.setdefault(m.job_id, []).append(m)
    samples = 0
    for job_id, ms in sorted(by_job.items()):
        frames = []
        for m in ms:
            t, v = m.telemetry()
            times = pl.Series(np.datetime64(cfg.start, "us") + (t * 1e6).astype(np.int64).astype("timedelta64[us]"))
            nh = len(m.hosts)
            frames.append(pl.DataFrame({
                "time": times.gather(np.repeat(np.arange(len(t)), nh)).dt.replace_time_zone("UTC"),
                "host": pl.Series(m.hosts, dtype=pl.Utf8).gather(np.tile(np.arange(nh), len(t))),
                "metric": pl.repeat(METRIC, len(t) * nh, dtype=pl.Utf8, eager=True),
                "gpu": pl.Series([None] * (len(t) * nh), dtype=pl.Int32),
                "value": v.reshape(-1),
            }))
        frame = pl.concat(frames)
        samples += frame.height
        frame.write_parquet(folder / f"job-{job_id}.parquet")
    truth = out / "truth"
    truth.mkdir(parents=True, exist_ok=True)
    ts = lambda t: iso(cfg.start, float(t), micro=True)  # noqa: E731
    rows = [r for m in models for r in m.truth]
    with (truth / "stragglers.csv").open("w", newline="") as f:
        csv.writer(f).writerows([TRUTH_COLUMNS, *rows])
    with (truth / "slow_nodes.csv").open("w", newline="") as f:
        csv.writer(f).writerows([["host", "factor"], *sorted(slow.items())])
    with (truth / "job_slowdowns.csv").open("w", newline="") as f:
        csv.writer(f).writerows([["job_id", "instance", "start", "end", "factor", "kind"],
                                 *[(m.job_id, m.instance, ts(m.starts[a]), ts(m.ends[b]), round(fac, 4), kind)
                                   for m in models for a, b, fac, kind in m.slowdowns]])
    return {"stragglers": {"jobs": len(by_job), "instances": len(models), "episodes": len(rows),
                           "slow_nodes": len(slow), "job_slowdowns": sum(len(m.slowdowns) for m in models),
                           "iteration_time_samples": samples}}
