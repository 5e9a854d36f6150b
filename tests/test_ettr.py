"""Expected ETTR (Meta eq. 1/2), its Monte Carlo check, MTTF projections, Fig. 10 sweep, P_deg."""
import itertools

import numpy as np
import pytest
from click.testing import CliRunner

from analysis.derive import ettr as E
from pipelines.cli import main


def test_meta_headline_numbers():
    # 16,384 GPUs at RSC-1's 6.5 failures per 1,000 node-days, 5-minute restarts
    assert E.expected_ettr(2048, 0.0065, 5 / 60, 60 / 60) == pytest.approx(0.7, abs=0.03)
    assert E.expected_ettr(2048, 0.0065, 5 / 60, 5 / 60) == pytest.approx(0.93, abs=0.005)
    assert E.job_mttf_hours(16384 / 8, 0.0065) == pytest.approx(1.8, abs=0.01)
    assert E.job_mttf_hours(131072 / 8, 0.0065) == pytest.approx(0.23, abs=0.01)


def test_closed_form_agrees_with_monte_carlo_where_valid():
    checked = 0
    for nodes, rate, dt_min, q_h in itertools.product([16, 128, 512, 2048], [0.00234, 0.0065, 0.02],
                                                      [5, 15, 30, 60], [0.0, 0.25]):
        if not E.closed_form_valid(nodes, rate, 5 / 60, dt_min / 60):
            continue
        runtime = 24 * 14.0
        closed = E.expected_ettr(nodes, rate, 5 / 60, dt_min / 60, q_h, runtime)
        mc = E.monte_carlo_ettr(nodes, rate, 5 / 60, dt_min / 60, q_h, runtime, trials=1500, seed=nodes)
        assert abs(closed - mc.mean) / mc.mean < 0.05, (nodes, rate, dt_min, q_h, closed, mc.mean)
        checked += 1
    assert checked >= 25


def test_monte_carlo_without_failures_is_exact():
    mc = E.monte_carlo_ettr(8, 0.0, 5 / 60, 1.0, 0.0, runtime_h=10.0, trials=10)
    assert mc.mean == pytest.approx(10 / (10 + 5 / 60))


def test_checkpoint_interval_for_a_target():
    dt = E.checkpoint_for_target(0.9, 2048, 0.0065, 5 / 60)
    assert E.expected_ettr(2048, 0.0065, 5 / 60, dt) == pytest.approx(0.9)
    assert E.checkpoint_for_target(0.99, 16384, 0.0065, 5 / 60) is None  # restart overhead alone is too much
    rows = E.sweep(0.5, [6.5], [131072], 5 / 60)
    assert 1 < rows[0]["checkpoint_minutes"] < 10  # Meta: ~7 minutes at O(1e5) GPUs


def test_gamma_interval_covers_the_rate():
    lo, hi = E.gamma_rate_ci(10, 1000.0)
    assert lo < 10 / 1000 < hi and E.gamma_rate_ci(0, 1000.0)[0] == 0.0


def test_p_deg():
    assert E.p_deg(np.array([1.0] * 10)) == 0.0
    times = np.array([1.0] * 9 + [3.0])  # mean 1.2 -> threshold 1.44; excess 1.56 of 12
    assert E.p_deg(times) == pytest.approx(1.56 / 12)


def test_cli_ettr():
    out = CliRunner().invoke(main, ["ettr", "--gpus", "16384", "--failure-rate", "6.5", "--checkpoint-min", "5",
                                    "--restart-min", "5", "--monte-carlo"])
    assert out.exit_code == 0, out.output
    assert "job MTTF:       1.803 h" in out.output and "expected ETTR:  0.9307" in out.output
    assert "Monte Carlo:    0.93" in out.output
    sweep = CliRunner().invoke(main, ["ettr", "--sweep", "--target", "0.9"])
    assert sweep.exit_code == 0
    header = next(line for line in sweep.output.splitlines() if "GPUs" in line and "┆" in line)
    # every column says what it holds: the failure rate (its unit) and the job sizes in GPUs; the minutes above
    assert [c.strip() for c in header.strip("│ ").split("┆")] == [
        "r per 1,000 node-days", "1,024 GPUs", "4,096 GPUs", "16,384 GPUs", "65,536 GPUs", "131,072 GPUs"]
    assert "Δt in minutes" in sweep.output.splitlines()[0]


def test_expected_ettr_curve_switches_to_monte_carlo_where_the_closed_form_fails():
    sizes = [8 * 2 ** k for k in range(15)]
    u0, dt, q, runtime = 5 / 60, 1.0, 0.2, 20.0
    rows = E.expected_ettr_curve(sizes, 0.05, u0, dt, q, runtime)
    methods = [r["method"] for r in rows]
    # closed form for the small sizes, then simulation, then runs that cannot progress: in that order
    order = {"closed form": 0, "Monte Carlo": 1, "no progress": 2}
    assert [order[m] for m in methods] == sorted(order[m] for m in methods) and set(methods) == set(order)
    for r in rows:
        n = r["n_gpus"] / 8
        if r["method"] == "closed form":
            assert E.closed_form_valid(n, 0.05, u0, dt)
            assert r["expected"] == E.expected_ettr(n, 0.05, u0, dt, q, runtime)
        elif r["method"] == "Monte Carlo":
            assert not E.closed_form_valid(n, 0.05, u0, dt)
            assert r["expected"] == pytest.approx(E.monte_carlo_ettr(n, 0.05, u0, dt, q, runtime, 400, 0).mean)
        else:
            assert n * 0.05 / 24 * (u0 + dt) > E.NO_PROGRESS and r["expected"] == 0.0
    # beyond its range the closed form overstates the loss (eq. 1 goes to 0 long before the simulated run does)
    first_mc = next(r for r in rows if r["method"] == "Monte Carlo")
    assert first_mc["expected"] > E.expected_ettr(first_mc["n_gpus"] / 8, 0.05, u0, dt, q, runtime)
    # a simulated point next to the no-progress region is already under 1%
    last_mc = [r for r in rows if r["method"] == "Monte Carlo"][-1]
    assert last_mc["expected"] < 0.05
