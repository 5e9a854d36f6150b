"""Effective Training Time Ratio and MTTF (Meta RSC §II-D and Appendix A).

Units: times in hours unless a name says otherwise; failure rates r in
failures per node-day (so N·r is failures per day for an N-node job)."""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

GPUS_PER_NODE = 8


def job_mttf_hours(n_nodes: float, r_per_node_day: float) -> float:
    """MTTF = 1 / (N·r)."""
    return math.inf if r_per_node_day <= 0 else 24.0 / (n_nodes * r_per_node_day)


def expected_ettr(n_nodes: float, r_per_node_day: float, u0_h: float, dt_h: float, q_h: float = 0.0,
                  runtime_h: float | None = None) -> float:
    """Meta eq. (1):  (1 - N r (u0 + Δt/2)) / (1 + N r (q + (u0/R)(q + u0 + Δt/2))).
    Without a runtime R (a long run) the u0/R term vanishes; with q = 0 as well
    this is eq. (2): 1 - N r (u0 + Δt/2). Valid while u0 + Δt/2 << MTTF;
    returns 0 where the formula goes negative (the run never progresses)."""
    rate = n_nodes * r_per_node_day / 24.0  # failures per hour
    numerator = 1.0 - rate * (u0_h + dt_h / 2)
    tail = (u0_h / runtime_h) * (q_h + u0_h + dt_h / 2) if runtime_h else 0.0
    return max(0.0, numerator / (1.0 + rate * (q_h + tail)))


def closed_form_valid(n_nodes: float, r_per_node_day: float, u0_h: float, dt_h: float, factor: float = 0.1) -> bool:
    """The approximation holds while u0 + Δt/2 is small against the MTTF."""
    return u0_h + dt_h / 2 <= factor * job_mttf_hours(n_nodes, r_per_node_day)


@dataclass
class MonteCarloResult:
    mean: float
    ci_low: float
    ci_high: float
    trials: int
    mean_failures: float


def monte_carlo_ettr(n_nodes: float, r_per_node_day: float, u0_h: float, dt_h: float, q_h: float = 0.0,
                     runtime_h: float = 24.0 * 7, trials: int = 2000, seed: int = 0) -> MonteCarloResult:
    """Simulate one job run many times: each (re)start waits an exponential
    queue time (mean q), pays the restart overhead u0, then trains; failures
    arrive as a Poisson process at rate N·r over scheduled time; a failure
    loses the work since the last checkpoint (every Δt of progress). ETTR of a
    trial = productive runtime R / wallclock W. Vectorised over trials."""
    rng = np.random.default_rng(seed)
    rate = n_nodes * r_per_node_day / 24.0
    left = np.full(trials, float(runtime_h))
    wall = np.zeros(trials)
    failures = np.zeros(trials)
    active = np.ones(trials, dtype=bool)
    for _ in range(1_000_000):
        idx = np.flatnonzero(active)
        if idx.size == 0:
            break
        if q_h > 0:
            wall[idx] += rng.exponential(q_h, idx.size)
        to_fail = rng.exponential(1 / rate, idx.size) if rate > 0 else np.full(idx.size, np.inf)
        need = u0_h + left[idx]
        done = to_fail >= need
        wall[idx[done]] += need[done]
        active[idx[done]] = False
        hit = idx[~done]
        t = to_fail[~done]
        wall[hit] += t
        failures[hit] += 1
        progress = np.maximum(0.0, t - u0_h)
        left[hit] -= np.floor(progress / dt_h) * dt_h  # work since the last checkpoint is lost
    else:
        raise RuntimeError("Monte Carlo did not converge: the run cannot finish at this failure rate")
    ettr = runtime_h / wall
    half = 1.96 * ettr.std(ddof=1) / math.sqrt(trials)
    return MonteCarloResult(float(ettr.mean()), float(ettr.mean() - half), float(ettr.mean() + half), trials,
                            float(failures.mean()))


NO_PROGRESS = 7.0  # x = N·r·(u0 + Δt) beyond which a segment reaches its next checkpoint with p < e^-7:
# ETTR is then below about x·e^-x < 1%, and simulating it would take ~e^x restarts per checkpoint


def reaches_checkpoints(n_nodes: float, r_per_node_day: float, u0_h: float, dt_h: float) -> bool:
    """False where a run would rarely reach its next checkpoint (N·r·(u0 + Δt) > NO_PROGRESS)."""
    return n_nodes * r_per_node_day / 24.0 * (u0_h + dt_h) <= NO_PROGRESS


def expected_ettr_curve(sizes_gpus: list[int], r_per_node_day: float, u0_h: float, dt_h: float, q_h: float = 0.0,
                        runtime_h: float | None = None, trials: int = 400, seed: int = 0,
                        gpus_per_node: int = GPUS_PER_NODE) -> list[dict]:
    """Expected ETTR per job size: Meta's eq. 1 where it is valid (u0 + Δt/2 small against the MTTF), the
    Monte Carlo of the same run beyond it, and 0 where a run could not reach its next checkpoint in
    practice (below 1%, see NO_PROGRESS). Each point says which it is."""
    rows = []
    for g in sizes_gpus:
        n = g / gpus_per_node
        if closed_form_valid(n, r_per_node_day, u0_h, dt_h):
            value, method = expected_ettr(n, r_per_node_day, u0_h, dt_h, q_h, runtime_h), "closed form"
        elif not reaches_checkpoints(n, r_per_node_day, u0_h, dt_h):
            value, method = 0.0, "no progress"
        else:
            mc = monte_carlo_ettr(n, r_per_node_day, u0_h, dt_h, q_h, runtime_h or 24.0 * 7, trials, seed)
            value, method = mc.mean, "Monte Carlo"
        rows.append({"n_gpus": g, "expected": value, "method": method})
    return rows


def checkpoint_for_target(target: float, n_nodes: float, r_per_node_day: float, u0_h: float) -> float | None:
    """Longest checkpoint interval (hours) reaching ``target`` expected ETTR with
    the long-run form; None when even Δt → 0 falls short (restart overhead alone
    costs too much)."""
    rate = n_nodes * r_per_node_day / 24.0
    if rate <= 0:
        return math.inf
    dt = 2 * ((1 - target) / rate - u0_h)
    return dt if dt > 0 else None


def sweep(target: float, rates_per_1000: list[float], gpus: list[int], u0_h: float,
          gpus_per_node: int = GPUS_PER_NODE) -> list[dict]:
    """Meta Fig. 10: the checkpoint interval needed for a target ETTR, by
    failure rate and job size."""
    rows = []
    for rate in rates_per_1000:
        for g in gpus:
            dt = checkpoint_for_target(target, g / gpus_per_node, rate / 1000, u0_h)
            rows.append({"failures_per_1000_node_days": rate, "gpus": g,
                         "checkpoint_minutes": None if dt is None else round(dt * 60, 2),
                         "job_mttf_hours": round(job_mttf_hours(g / gpus_per_node, rate / 1000), 3)})
    return rows


def gamma_rate_ci(failures: int, exposure: float, level: float = 0.90) -> tuple[float, float]:
    """Exact (Gamma) confidence interval of a Poisson rate: failures over exposure."""
    # the Gamma quantile as scipy.stats.gamma.ppf computes it (gammaincinv), without importing scipy.stats: that takes
    # a second, which a nightly paid for this alone
    from scipy import special

    lo_q, hi_q = (1 - level) / 2, 1 - (1 - level) / 2
    lo = special.gammaincinv(failures, lo_q) / exposure if failures > 0 else 0.0
    hi = special.gammaincinv(failures + 1, hi_q) / exposure
    return float(lo), float(hi)


def p_deg(iteration_times: np.ndarray, slack: float = 1.2) -> float:
    """Aegis degradation share: Σ_{T_k > 1.2·mean(T)} (T_k − 1.2·mean(T)) / Σ T_k."""
    t = np.asarray(iteration_times, dtype=float)
    t = t[np.isfinite(t)]
    if t.size == 0 or t.sum() <= 0:
        return float("nan")
    excess = t - slack * t.mean()
    return float(excess[excess > 0].sum() / t.sum())
