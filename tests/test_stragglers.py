"""Stragglers from step times (analysis/derive/stragglers.py) on step times made here, with the answer known:
a persistent straggler, a transient burst, a worker slower from the first step, two at once, and a job-wide
slowdown that is nobody's fault."""
from __future__ import annotations

from datetime import datetime, timedelta

import numpy as np
import polars as pl
import pytest

from analysis.derive import stragglers as S

T0 = datetime(2024, 3, 1, 12, 0)


def _job(job_id: str, hosts: list[str], steps: int, slow: dict, seed: int = 0, wide: tuple = ()) -> pl.DataFrame:
    """slow: host -> (first step, last step, factor); wide: (first, last, factor) for every worker."""
    rng = np.random.default_rng(seed)
    base = 1.0 + rng.normal(0, 0.01, size=(steps, len(hosts)))
    for i, h in enumerate(hosts):
        if h in slow:
            a, b, f = slow[h]
            base[a:b + 1, i] *= f
    if wide:
        a, b, f = wide
        base[a:b + 1, :] *= f
    job_step = base.max(axis=1)
    times = np.concatenate([[0.0], np.cumsum(job_step)[:-1]])
    rows = [{"job_id": job_id, "instance": 0, "host": h, "rank": i, "key": s,
             "time": T0 + timedelta(seconds=float(times[s])), "step_seconds": float(base[s, i]), "bucket_s": None,
             "source": "joblog"} for s in range(steps) for i, h in enumerate(hosts)]
    return pl.DataFrame(rows, schema=S.STEP_COLUMNS), base


def _cost(base: np.ndarray, slow_cols: list[int], a: int, b: int) -> float:
    """What the job would have saved at its peers' pace over steps a..b."""
    peers = np.delete(base, slow_cols, axis=1)
    return float(sum(base[s].max() - peers[s].max() for s in range(a, b + 1)))


HOSTS = [f"gpu{i:03d}" for i in range(10)]


def test_each_kind_is_found_with_its_span_and_cost():
    slow = {"gpu003": (100, 199, 1.5), "gpu007": (40, 80, 2.0), "gpu005": (0, 199, 1.25)}
    steps, base = _job("1", HOSTS, 200, slow, wide=(150, 160, 3.0))
    found = S.episodes(steps).sort("host")
    assert found["host"].to_list() == ["gpu003", "gpu005", "gpu007"]
    kinds = dict(zip(found["host"], found["kind"]))
    assert kinds == {"gpu003": "persistent", "gpu005": "placement", "gpu007": "transient"}
    g7 = found.filter(pl.col("host") == "gpu007").row(0, named=True)
    assert g7["keys"] == 41 and g7["slowdown"] == pytest.approx(2.0, rel=0.03)
    # gpu005 is slow throughout: at steps 40-80 gpu007 and gpu005 are slow together and share the wait
    expected7 = sum((base[s].max() - np.delete(base, [5, 7], axis=1)[s].max()) / 2 for s in range(40, 81))
    assert g7["cost_seconds"] == pytest.approx(expected7, rel=1e-9)
    g3 = found.filter(pl.col("host") == "gpu003").row(0, named=True)
    expected3 = sum((base[s].max() - np.delete(base, [3, 5], axis=1)[s].max()) / 2 for s in range(100, 200))
    assert g3["cost_seconds"] == pytest.approx(expected3, rel=1e-9) and g3["concurrent"] == 1


def test_a_job_wide_slowdown_is_nobodys_straggler():
    steps, _ = _job("2", HOSTS, 120, {}, wide=(30, 60, 3.0))
    assert S.episodes(steps).height == 0


def test_a_short_blip_is_not_an_episode():
    steps, _ = _job("3", HOSTS, 120, {"gpu002": (50, 50, 3.0)})
    assert S.episodes(steps).height == 0


def test_a_host_slow_in_two_jobs_is_the_nodes_a_rank_that_moves_is_the_jobs():
    a, _ = _job("10", HOSTS, 100, {"gpu004": (20, 99, 1.4)}, seed=1)
    b, _ = _job("11", [f"gpu{i:03d}" for i in range(4, 14)], 100, {"gpu004": (10, 60, 1.6)}, seed=2)
    # job 12 requeued on other hosts: its rank 2 is slow on gpu022 then on gpu032
    c0, _ = _job("12", [f"gpu{i:03d}" for i in range(20, 30)], 80, {"gpu022": (0, 79, 1.5)}, seed=3)
    c1, _ = _job("12", [f"gpu{i:03d}" for i in range(30, 40)], 80, {"gpu032": (0, 79, 1.5)}, seed=4)
    c1 = c1.with_columns(instance=pl.lit(1, pl.Int64))
    found = S.origin(S.episodes(pl.concat([a, b, c0, c1])))
    verdict = {(r["job_id"], r["host"]): r["origin"] for r in found.iter_rows(named=True)}
    assert verdict == {("10", "gpu004"): "node", ("11", "gpu004"): "node", ("12", "gpu022"): "job",
                       ("12", "gpu032"): "job"}


def test_time_buckets_of_telemetry_cost_the_share_of_the_bucket_spent_waiting():
    """A telemetry series: each bucket's mean step time per host; a bucket of 60 s at a job step of 1.5 s
    against a peer pace of 1.0 s cost 60 x (1 - 1/1.5) = 20 s."""
    rows = []
    for k in range(20):
        for i, h in enumerate(HOSTS):
            v = 1.5 if (h == "gpu009" and 5 <= k <= 14) else 1.0
            rows.append({"job_id": "7", "instance": 0, "host": h, "rank": None, "key": k,
                         "time": T0 + timedelta(seconds=60 * k), "step_seconds": v, "bucket_s": 60.0,
                         "source": "telemetry"})
    found = S.episodes(pl.DataFrame(rows, schema=S.STEP_COLUMNS))
    (e,) = found.iter_rows(named=True)
    assert (e["host"], e["keys"], e["kind"]) == ("gpu009", 10, "transient")
    assert e["start_time"] == T0 + timedelta(minutes=5) and e["end_time"] == T0 + timedelta(minutes=15)
    assert e["cost_seconds"] == pytest.approx(10 * 60 * (1 - 1 / 1.5))


def test_two_workers_are_measured_one_against_the_other():
    """With two hosts the peers' pace is the other host's: a 1.3x worker reads 1.3x, not its ratio to the pair's
    midpoint (1.13x)."""
    steps, _ = _job("20", HOSTS[:2], 120, {"gpu001": (30, 89, 1.3)})
    (e,) = S.episodes(steps).iter_rows(named=True)
    assert (e["host"], e["keys"]) == ("gpu001", 60) and e["slowdown"] == pytest.approx(1.3, rel=0.03)


def test_most_of_a_job_slow_at_once_is_still_seen():
    """Three of four hosts slow together: each is measured against the lower quartile of the others."""
    slow = {h: (40, 99, 1.5) for h in HOSTS[:3]}
    steps, _ = _job("21", HOSTS[:4], 140, slow)
    found = S.episodes(steps)
    assert sorted(found["host"]) == HOSTS[:3] and (found["keys"] == 60).all() and (found["concurrent"] == 2).all()


def test_an_episode_near_the_threshold_is_one_episode():
    """A 1.12x worker dips under 1.10 now and then with noise: once slow it holds down to 1.05 (hysteresis), so the
    episode is found whole, not in pieces."""
    steps, _ = _job("22", HOSTS, 300, {"gpu004": (50, 249, 1.12)}, seed=5)
    found = S.episodes(steps)
    assert found.height == 1 and abs(found["keys"][0] - 200) <= 4


def _verdicts(found, **kw):
    return {(r["job_id"], r["instance"], r["host"]): (r["origin"], r["basis"]) for r in S.origin(found, **kw).iter_rows(named=True)}


def test_verdicts_need_evidence_beyond_one_run():
    """Slow from the start in its only job: undetermined; slowing down during a run: the node's; a rank slow from
    the start by a different amount on another host is not the same imbalance moving with the job."""
    once, _ = _job("30", HOSTS, 100, {"gpu001": (0, 99, 1.4)}, seed=6)
    during, _ = _job("31", [f"gpu{i:03d}" for i in range(40, 50)], 100, {"gpu045": (30, 99, 1.4)}, seed=7)
    a, _ = _job("32", [f"gpu{i:03d}" for i in range(20, 30)], 80, {"gpu022": (0, 79, 1.3)}, seed=8)
    b, _ = _job("32", [f"gpu{i:03d}" for i in range(30, 40)], 80, {"gpu032": (0, 79, 1.6)}, seed=9)
    found = S.episodes(pl.concat([once, during, a, b.with_columns(instance=pl.lit(1, pl.Int64))]))
    assert _verdicts(found) == {("30", 0, "gpu001"): ("undetermined", "once"), ("31", 0, "gpu045"): ("node", "during"),
                                ("32", 0, "gpu022"): ("undetermined", "once"), ("32", 1, "gpu032"): ("undetermined", "once")}


def test_a_host_in_two_jobs_is_the_nodes_only_beyond_chance():
    """Two jobs each slow from the start on gpu005: with few measured pairs straggling (the fleet rate) that is the
    node's; when most of the fleet's measured (job, host) pairs straggle, two of the host's many jobs is chance."""
    j1, _ = _job("40", HOSTS, 100, {"gpu005": (0, 99, 1.4)}, seed=10)
    j2, _ = _job("41", HOSTS, 100, {"gpu005": (0, 99, 1.4)}, seed=11)
    found = S.episodes(pl.concat([j1, j2]))
    few = pl.DataFrame({"job_id": [str(j) for j in range(40, 60) for _ in HOSTS], "host": HOSTS * 20})
    assert set(_verdicts(found, workers=few).values()) == {("node", "repeat")}
    # gpu005 measured in 20 jobs, straggling in 2, while a third of all measured pairs straggle
    many = pl.concat([found] + [found.with_columns(job_id=pl.lit(str(j)), host=pl.lit(f"x{j}")) for j in range(60, 66)])
    crowded = pl.DataFrame({"job_id": [str(j) for j in range(40, 60)] + [str(j) for j in range(60, 66)] * 2,
                            "host": ["gpu005"] * 20 + [f"x{j}" for j in range(60, 66)] * 2})
    assert _verdicts(many, workers=crowded)[("40", 0, "gpu005")] == ("undetermined", "once")
