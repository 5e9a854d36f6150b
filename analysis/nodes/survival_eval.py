"""The held-out metrics of the incident models in numpy: pycox's EvalSurv concordance_td('adj_antolini') and
integrated Brier score with censor_surv='km', the same numbers (tests/test_survival_eval.py checks them against
pycox). pycox computes them with numba functions compiled on first use: some 3 s of every process that
evaluates a model, which is every pipeline run that trains one."""
from __future__ import annotations

import numpy as np
from scipy.integrate import simpson

CHUNK = 512  # rows of the pair matrices at a time: 3,000 samples make 9 M pairs


def step_index(index: np.ndarray, times: np.ndarray, steps: str) -> np.ndarray:
    """pycox.utils.idx_at_times: the row of ``index`` for each time, 'post' the last at or before it, 'pre' the
    first at or after it (clipped to the index)."""
    if steps == "pre":
        idx = np.searchsorted(index, times)
    else:
        idx = np.searchsorted(index, times, side="right") - 1
    return idx.clip(0, len(index) - 1)


def concordance_td(surv: np.ndarray, grid: np.ndarray, durations: np.ndarray, events: np.ndarray) -> float:
    """Antolini's time-dependent concordance with pycox's 'adj_antolini' ties: a pair (i, j) is comparable when
    i's incident comes first, or both end at once and one is an incident; i's curve at its own time against j's
    there, equal curves counting half. NaN when no pair is comparable (where pycox divides by zero).
    ``surv``: one column per sample, one row per ``grid`` time."""
    t, d = np.asarray(durations, dtype=float), np.asarray(events).astype(bool)
    n = len(t)
    at = step_index(grid, t, "post")
    own = surv[at, np.arange(n)]
    concordant = comparable = 0.0
    for lo in range(0, n, CHUNK):
        rows = np.arange(lo, min(lo + CHUNK, n))
        ti, di, si = t[rows, None], d[rows, None], own[rows, None]
        sj = surv[at[rows], :]  # every sample's curve at row i's time
        before, tied = ti < t, ti == t
        pair = ((before & di) | (tied & (di | d))) & (rows[:, None] != np.arange(n))
        equal = 0.5 * (si == sj)
        first = (si < sj) + equal  # i ends first (or both, i the incident): i's curve should be lower
        second = (si > sj) + equal  # both at once, j the incident
        both = 1.0 - 0.5 * (si != sj)  # two incidents at once: unordered, equal curves count fully
        score = np.where(before, first, np.where(di & d, both, np.where(di, first, np.where(d, second, 0.0))))
        concordant += float((score * pair).sum())
        comparable += float(pair.sum())
    return concordant / comparable if comparable else float("nan")


def kaplan_meier(durations: np.ndarray, events: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """pycox.utils.kaplan_meier from time 0: (times, survival), 1 at 0 prepended when every duration is later,
    and 0 from the first time every sample still at risk ends."""
    times, group = np.unique(durations, return_inverse=True)
    ended = np.bincount(group, weights=events, minlength=len(times))
    left = len(durations) - np.concatenate([[0], np.cumsum(np.bincount(group, minlength=len(times)))[:-1]])
    survive = 1 - ended / left
    surv = np.zeros_like(survive)
    zero = np.flatnonzero(survive == 0)
    upto = zero[0] if len(zero) else len(survive)
    surv[:upto] = np.exp(np.log(survive[:upto]).cumsum())  # pycox's sums (not cumprod): the same last bits
    if times.min() > 0:
        times, surv = np.concatenate([[0], times]), np.concatenate([[1.0], surv])
    return times, surv


def integrated_brier_score(surv: np.ndarray, grid: np.ndarray, durations: np.ndarray, events: np.ndarray,
                           time_grid: np.ndarray) -> float:
    """The Brier score over ``time_grid``, each sample weighted by the inverse of the censoring's Kaplan-Meier
    (at the time for a sample still running, just before its incident for one that had it), integrated
    (Simpson) and divided by the span."""
    t, d = np.asarray(durations, dtype=float), np.asarray(events) == 1
    km_t, km_s = kaplan_meier(t, 1 - np.asarray(events))
    s = surv[step_index(grid, time_grid, "post"), :]
    g_ts = km_s[step_index(km_t, time_grid, "post")][:, None]
    g_tt = km_s[(step_index(km_t, t, "pre") - 1).clip(0)][None, :]  # G(t-): the censoring just before
    ended = (t <= time_grid[:, None]) & d
    alive = t > time_grid[:, None]
    with np.errstate(divide="ignore", invalid="ignore"):
        weight = np.where(ended, 1.0 / g_tt, np.where(alive, 1.0 / g_ts, 0.0))
        score = np.where(ended, s ** 2, np.where(alive, (1 - s) ** 2, 0.0))
        brier = (score * weight).sum(axis=1) / weight.sum(axis=1)
    return float(simpson(brier, x=time_grid) / (time_grid[-1] - time_grid[0]))
