"""analysis.nodes.survival_eval gives pycox's EvalSurv numbers (concordance_td('adj_antolini'), the integrated
Brier score with a Kaplan-Meier censoring) without its numba compile: checked against pycox itself on random
cases and on cases full of ties (same curves, same durations, incidents and censorings at one time), as the
incident models' held-out samples have them. Small cases: pycox compiles its functions once for this module."""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from analysis.nodes import survival_eval


def _pycox(surv, grid, durations, events, brier_grid):
    import scipy.integrate
    from pycox.evaluation import EvalSurv

    if not hasattr(scipy.integrate, "simps"):  # pycox 0.3 calls the name SciPy removed
        scipy.integrate.simps = scipy.integrate.simpson
    ev = EvalSurv(pd.DataFrame(surv, index=grid), durations, events, censor_surv="km")
    try:
        concordance = float(ev.concordance_td("adj_antolini"))
    except ZeroDivisionError:
        concordance = float("nan")
    return concordance, float(ev.integrated_brier_score(brier_grid))


def _case(seed: int, n: int, ties: bool):
    """``n`` samples' curves on a 0..24 h grid, durations and incidents; with ``ties``, few distinct curves
    (nodes in the same status), durations on whole hours (many equal) and the last duration censored (the
    censoring's Kaplan-Meier falls to 0 there)."""
    rng = np.random.default_rng(seed)
    grid = np.linspace(0, 24, 49)
    rates = rng.choice([0.02, 0.05, 0.1], n) if ties else rng.uniform(0.005, 0.2, n)
    surv = np.exp(-np.outer(grid, rates))
    durations = (rng.integers(1, 24, n) if ties else rng.uniform(0.1, 30, n)).astype(float)
    events = (rng.random(n) < 0.5).astype(int)
    if ties:
        events[durations == durations.max()] = 0
        durations[:4], events[:4] = 6.0, [1, 1, 0, 0]  # incidents and censorings at one time
    return surv, grid, durations, events


@pytest.mark.parametrize("seed,n,ties", [(1, 40, False), (2, 97, False), (3, 60, True), (4, 150, True),
                                         (5, 7, True)])
def test_numpy_metrics_equal_pycox(seed, n, ties):
    surv, grid, durations, events = _case(seed, n, ties)
    brier_grid = grid[(grid > 0) & (grid < durations.max())]
    concordance, brier = _pycox(surv, grid, durations, events, brier_grid)
    assert survival_eval.concordance_td(surv, grid, durations, events) == pytest.approx(concordance, rel=1e-12)
    assert survival_eval.integrated_brier_score(surv, grid, durations, events, brier_grid) == pytest.approx(
        brier, rel=1e-9)


def test_concordance_is_counted_in_chunks_as_in_one(monkeypatch):
    """More samples than one chunk of the pair matrices: the chunks' sums are the whole's."""
    surv, grid, durations, events = _case(6, 90, True)
    whole = survival_eval.concordance_td(surv, grid, durations, events)
    monkeypatch.setattr(survival_eval, "CHUNK", 16)
    assert survival_eval.concordance_td(surv, grid, durations, events) == whole
    assert 0.0 < whole < 1.0


def test_no_comparable_pair_is_nan_where_pycox_divides_by_zero():
    """One held-out incident and nothing that outlives it (pycox's ZeroDivisionError: tests/test_node_models.py
    has the case through the incident model's evaluation)."""
    grid = np.linspace(0, 24, 25)
    surv = np.linspace(1.0, 0.2, 25).reshape(-1, 1)
    assert np.isnan(survival_eval.concordance_td(surv, grid, np.array([5.0]), np.array([1])))


def test_kaplan_meier_equals_pycox():
    from pycox.utils import kaplan_meier

    _, _, durations, events = _case(7, 50, True)
    times, surv = survival_eval.kaplan_meier(durations, 1 - events)
    km = kaplan_meier(durations, 1 - events)
    np.testing.assert_array_equal(times, km.index.values)
    np.testing.assert_allclose(surv, km.values, rtol=1e-14)
    assert surv[-1] == 0.0  # the last duration is a censoring: the censoring's survival falls to 0
