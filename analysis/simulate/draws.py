"""Scalar draws as numpy's Generator.choice makes them, without its per-call checks (new_job, where they sat, topped the
simulator's profile before issue 35): the same values from the same draws, so every output stays byte for byte as it was
(tests/test_simulate_identical.py).

``Generator.choice(a, p=p)`` for one value takes one ``random()`` and finds it in ``p``'s normalised cumulative
sum (``searchsorted(side="right")``); ``choice(a)`` without ``p`` takes ``integers(0, len(a))``.
"""
from __future__ import annotations

from bisect import bisect_right
from typing import Sequence

import numpy as np


class Categorical:
    """``rng.choice(len(p), p=p)``, one value at a time."""

    def __init__(self, p):
        p = np.asarray(p, dtype=np.float64)
        if not (np.all(np.isfinite(p)) and np.all(p >= 0) and abs(p.sum() - 1.0) <= np.sqrt(np.finfo(np.float64).eps)):
            raise ValueError("probabilities must be finite, non-negative and sum to 1")  # as choice checks them
        cdf = p.cumsum()
        cdf /= cdf[-1]  # as numpy normalises it
        self.cdf = cdf.tolist()

    def index(self, rng: np.random.Generator) -> int:
        return bisect_right(self.cdf, rng.random())


def pick(rng: np.random.Generator, items: Sequence):
    """``rng.choice(items)`` for a 1-D sequence (its item, not a numpy scalar)."""
    return items[int(rng.integers(0, len(items)))]
