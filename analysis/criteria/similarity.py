"""The CDF distance between benchmark samples, and Anubis Algorithm 2.

A sample is a row of Q quantiles of what one node produced for one metric in
one run (Q = 1 for a single value). Because the area between two empirical
CDFs equals the area between their quantile functions, the distance is the
mean absolute difference of the rows (midpoint rule over p in (0, 1)).
Dividing by the largest absolute value either sample holds bounds it in
[0, 1] for non-negative results; for single values it is the relative
difference |x - y| / max(x, y), so similarity 0.95 reads as "5% apart", the
same scale as SuperBench's variance rules.
"""
from __future__ import annotations

import numpy as np

HIGHER, LOWER = "higher", "lower"


def _scale(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Per pair of rows: the largest absolute value either holds (0 -> 1: equal zeros are distance 0)."""
    s = np.maximum(np.abs(a).max(axis=-1), np.abs(b).max(axis=-1))
    return np.where(s > 0, s, 1.0)


def similarity(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Two-sided similarity (1 - normalised CDF area) between rows of ``a`` and
    rows of ``b`` (broadcast: n x Q against Q gives n values)."""
    a, b = np.broadcast_arrays(np.atleast_2d(a), np.atleast_2d(b))
    d = np.abs(a - b).mean(axis=-1) / _scale(a, b)
    return 1.0 - np.clip(d, 0.0, 1.0)


def one_sided_similarity(observed: np.ndarray, criterion: np.ndarray, direction: str) -> np.ndarray:
    """Only worse counts (Anubis eq. 4): for a higher-is-better metric the area
    where the observed quantiles fall below the criterion's, for lower-is-better
    where they rise above it. A node faster than the fleet scores 1."""
    o, c = np.broadcast_arrays(np.atleast_2d(observed), np.atleast_2d(criterion))
    worse = (c - o) if direction == HIGHER else (o - c)
    d = np.clip(worse, 0.0, None).mean(axis=-1) / _scale(o, c)
    return 1.0 - np.clip(d, 0.0, 1.0)


def learn_criterion(samples: np.ndarray, alpha: float, max_iter: int = 200,
                    batch_share: float = 0.05) -> tuple[np.ndarray, np.ndarray]:
    """Algorithm 2: drop the samples least similar to the median sample until
    every remaining one is within ``alpha`` of it; the median of the rest is the
    criterion. Returns (criterion row, kept mask).

    The median sample is the element-wise median of the kept rows (for sorted
    quantile rows that is again a sorted quantile row). Dropping one sample per
    pass costs a pass per defect; each pass here drops the worst up to
    ``batch_share`` of the kept rows (at least one), only ever among those below
    alpha, so the result matches one-at-a-time unless the median moves by more
    than a 5% batch can move it."""
    x = np.asarray(samples, dtype=float)
    kept = np.ones(len(x), dtype=bool)
    for _ in range(max_iter):
        median = np.median(x[kept], axis=0)
        sim = similarity(x, median)
        below = kept & (sim < alpha)
        n_below = int(below.sum())
        if n_below == 0:
            return median, kept
        n_drop = min(n_below, max(1, int(batch_share * kept.sum())))
        idx = np.flatnonzero(below)
        kept[idx[np.argsort(sim[idx], kind="stable")[:n_drop]]] = False
        if kept.sum() == 0:
            break
    return (np.median(x[kept], axis=0) if kept.any() else np.median(x, axis=0)), kept


def repeatability(samples: np.ndarray, max_samples: int = 400, seed: int = 0) -> float:
    """Mean pairwise similarity (Anubis §3.4) over distinct pairs of ``samples``;
    above ``max_samples`` a seeded subset of that size stands for the rest."""
    x = np.asarray(samples, dtype=float)
    if len(x) < 2:
        return float("nan")
    if len(x) > max_samples:
        x = x[np.random.default_rng(seed).choice(len(x), size=max_samples, replace=False)]
    sim = similarity(x[:, None, :], x[None, :, :])
    n = len(x)
    return float((sim.sum() - np.trace(sim)) / (n * (n - 1)))
