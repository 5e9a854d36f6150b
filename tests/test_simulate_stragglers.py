"""The simulator's stragglers (analysis/simulate/stragglers.py): off, nothing changes; on, the job logs print
per-rank step times a reader gets back exactly, the telemetry carries them per host, and the truth's costs are
the What-if formula over the written step times."""
from __future__ import annotations

import csv
import hashlib
import re
from collections import defaultdict
from datetime import datetime, timezone

import numpy as np
import polars as pl
import pytest

from analysis.simulate import stragglers
from analysis.simulate.config import preset
from analysis.simulate.run import simulate

STEP = re.compile(r"^(?:\d+: )?\[rank(\d+)\]:\[titan\] (\S+ \S+) - root - INFO - step: +(\d+)  loss: +[\d.]+  "
                  r"memory: +[\d.]+GiB\([\d.]+%\)  tps: ([\d,]+)  tflops: [\d,.]+  mfu: [\d.]+%$")
START = re.compile(r"\[rank0\]:\[titan\] .* Training starts at step (\d+), with local batch size (\d+), global batch "
                   r"size (\d+), sequence length (\d+),")
INIT = re.compile(r"(gpu\d+):\d+:\d+ \[\d\] NCCL INFO comm 0x[0-9a-f]+ rank (\d+) nranks (\d+) ")
KINDS = {"persistent", "transient", "placement", "multiple", "job_skew"}
TRUTH_FILES = {"truth/stragglers.csv", "truth/slow_nodes.csv", "truth/job_slowdowns.csv"}


def digest(root):
    return {str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(root.rglob("*")) if p.is_file() and p.name != "summary.json"}


def _rows(path):
    with path.open() as f:
        return list(csv.DictReader(f))


def _when(text: str) -> float:
    return datetime.fromisoformat(text.replace(",", ".")).replace(tzinfo=timezone.utc).timestamp()


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """One seed off and on (with the simulator's own step times kept), and a second seed on."""
    root = tmp_path_factory.mktemp("stragglers")
    kept = []
    write = stragglers.write

    def keep(out, cfg, models, slow):
        kept.extend(models)
        return write(out, cfg, models, slow)

    simulate(preset("small"), root / "off")
    stragglers.write = keep
    try:
        simulate(preset("small", straggler_jobs=1.0), root / "on")
    finally:
        stragglers.write = write
    simulate(preset("small", seed=2, straggler_jobs=0.5), root / "on2")
    return root, {(m.job_id, m.instance): m for m in kept}


def test_off_is_what_it_was_and_on_touches_only_the_picked_jobs(runs, tmp_path):
    root, models = runs
    simulate(preset("small"), tmp_path / "again")
    off, on = digest(root / "off"), digest(root / "on")
    assert off == digest(tmp_path / "again")
    assert not any(f in off for f in TRUTH_FILES)
    assert not any("[titan]" in p.read_text() for p in (root / "off" / "joblogs").iterdir())
    for p in (root / "off" / "telemetry").iterdir():
        assert "iteration_time_seconds" not in pl.read_parquet(p)["metric"].unique().to_list()
    # stragglers draw from streams of their own: with them on, every other file is byte for byte the same
    picked = {job for job, _ in models}
    per_job = re.compile(r"^(?:joblogs/slurm|telemetry/job)-(\d+)\.(?:out|parquet)$")
    changed = {f for f in set(off) | set(on) if off.get(f) != on.get(f)}
    assert changed - TRUTH_FILES - {"truth/job_logs.csv"} == {
        f for f in changed if (m := per_job.match(f)) and m.group(1) in picked}
    assert TRUTH_FILES <= changed and all((m := per_job.match(f)) is None or m.group(1) in picked for f in changed)


def _parse(path):
    """A job log's step lines -> per instance (in file order): start step, tokens per step, rank -> host,
    {rank: [(step, time, step seconds)]}."""
    out = []
    for line in path.read_text().splitlines():
        if "starting training on" in line:
            out.append({"hosts": {}, "steps": defaultdict(list)})
        elif m := INIT.search(line):
            out[-1]["hosts"][int(m.group(2))] = m.group(1)
        elif m := START.search(line):
            out[-1].update(start=int(m.group(1)), tokens=int(m.group(2)) * int(m.group(4)))
        elif m := STEP.match(line):
            rank, tps = int(m.group(1)), int(m.group(4).replace(",", ""))
            out[-1]["steps"][rank].append((int(m.group(3)), _when(m.group(2)), out[-1]["tokens"] / tps))
    return [inst for inst in out if inst["steps"]]


@pytest.fixture(scope="module")
def parsed(runs):
    """(job, instance) -> the simulator's model of the instance and its parsed step lines."""
    root, models = runs
    by_job = defaultdict(list)
    for m in models.values():
        by_job[m.job_id].append(m)
    out = {}
    for job_id, ms in by_job.items():
        found = _parse(root / "on" / "joblogs" / f"slurm-{job_id}.out")
        assert len(found) == len(ms), job_id
        out.update({(job_id, str(m.instance)): (m, p) for m, p in zip(sorted(ms, key=lambda m: m.instance), found)})
    return out


@pytest.fixture(scope="module")
def lines(parsed):
    """(job, instance) -> (line end times, step seconds (L, n), k, hosts, per_node) as read from the job logs."""
    out = {}
    for key, (m, p) in parsed.items():
        n = len(p["steps"])
        times = np.array([t for _, t, _ in p["steps"][0]])
        step = np.array([[s for _, _, s in p["steps"][r]] for r in range(n)]).T
        out[key] = (times, step, m.plan.k, p["hosts"], n // len(set(p["hosts"].values())))
    return out


def test_step_lines_give_back_the_simulators_step_times(parsed):
    assert len(parsed) >= 20
    for m, p in parsed.values():
        n = m.step.shape[1]
        assert sorted(p["steps"]) == list(range(n))  # every rank has its lines ...
        steps = {r: [s for s, _, _ in v] for r, v in p["steps"].items()}
        assert all(v == steps[0] for v in steps.values()) and len(steps[0]) == len(m.ends)  # ... at the same steps
        gaps = np.diff([p["start"] - 1, *steps[0]]) if m.first_step == p["start"] else np.diff(steps[0])
        assert set(gaps.tolist()) == {m.plan.k}
        got = np.array([[sec for _, _, sec in p["steps"][r]] for r in range(n)]).T
        assert np.array_equal(got, m.step)  # exactly: local batch * sequence length / tps
        assert {r: p["hosts"][r] for r in range(n)} == {r: m.hosts[r // m.per_node] for r in range(n)}
        origin = m.t_origin.replace(tzinfo=timezone.utc).timestamp()
        assert np.allclose([t for _, t, _ in p["steps"][0]], origin + m.ends, atol=2e-3)


def test_truth_costs_are_the_what_if_formula_over_the_written_step_times(runs, lines):
    root, _ = runs
    truth = _rows(root / "on" / "truth" / "stragglers.csv")
    episodes = defaultdict(list)
    for row in truth:
        assert float(row["cost_seconds"]) >= 0 and float(row["slowdown"]) > 1.0
        assert row["origin"] == ("job" if row["kind"] == "job_skew" else "node")
        episodes[(row["job_id"], row["instance"])].append(row)
    for key, rows in episodes.items():
        times, step, k, hosts, per = lines[key]
        eps = []
        for row in rows:
            a, b = (int(x) for x in (row["ranks"].split("-") * 2)[:2])
            ranks = np.arange(a, b + 1)
            assert {hosts[int(r)] for r in ranks} == {row["host"]}
            on = (times > _when(row["start"]) + 1) & (times <= _when(row["end"]) + 1)
            eps.append((ranks, on))
        active = np.array([on for _, on in eps])
        straggling = np.zeros_like(step, dtype=bool)
        for ranks, on in eps:
            straggling[np.ix_(on, ranks)] = True
        job_step = step.max(axis=1)
        peers_max = np.where(straggling, -np.inf, step).max(axis=1)
        wait = k * (job_step - peers_max)
        share = np.where(active.any(axis=0), wait / np.maximum(active.sum(axis=0), 1), 0.0)
        for (ranks, on), row in zip(eps, rows):
            assert on.any()
            assert float(row["cost_seconds"]) == pytest.approx(float(share[on].sum()), rel=1e-9, abs=1e-5)
            peers_med = np.nanmedian(np.where(straggling, np.nan, step)[on], axis=1)
            ratio = np.median(step[on][:, ranks].max(axis=1) / peers_med)
            assert float(row["slowdown"]) == pytest.approx(ratio, abs=1e-4)


def test_every_kind_slow_nodes_repeat_skew_moves_with_its_rank(runs):
    root, _ = runs
    truth = pl.concat([pl.read_csv(root / d / "truth" / "stragglers.csv", schema_overrides={"job_id": pl.Utf8})
                       for d in ("on", "on2")])
    assert set(truth["kind"]) == KINDS
    assert (truth["cost_seconds"] > 0).mean() > 0.9
    # the slow nodes straggle in every picked job they ran in, two or more, from the first line to the last
    for d in ("on", "on2"):
        t = pl.read_csv(root / d / "truth" / "stragglers.csv", schema_overrides={"job_id": pl.Utf8})
        slow = pl.read_csv(root / d / "truth" / "slow_nodes.csv")
        assert slow.height >= 2 and slow["factor"].is_between(1.15, 1.6).all()
        on_slow = t.filter(pl.col("host").is_in(slow["host"].to_list()) & (pl.col("kind") == "placement"))
        assert on_slow.group_by("host").agg(pl.col("job_id").n_unique())["job_id"].min() >= 2
    # a job-side skew stays with its ranks when the job is requeued on other hosts
    skew = truth.filter(pl.col("kind") == "job_skew").group_by("job_id").agg(
        pl.col("ranks").n_unique(), pl.col("host").n_unique(), pl.col("instance").n_unique())
    assert (skew["ranks"] == 1).all()
    assert skew.filter((pl.col("instance") >= 2) & (pl.col("host") >= 2)).height >= 1


def test_telemetry_and_job_wide_slowdowns(runs, lines):
    root, _ = runs
    checked = 0
    for (job_id, inst), (times, step, k, hosts, per) in lines.items():
        frame = pl.read_parquet(root / "on" / "telemetry" / f"job-{job_id}.parquet")
        assert frame["metric"].unique().to_list() == ["iteration_time_seconds"]
        L = len(times)
        host_names = [hosts[r] for r in range(0, step.shape[1], per)]
        host_step = step.reshape(L, len(host_names), per).max(axis=2)
        sample = frame.with_columns(t=pl.col("time").dt.epoch("us") / 1e6)
        t = sample["t"].to_numpy()
        # a sample whose 10 s lie within one line's interval is that interval's step time of the host
        j = np.searchsorted(times, t + 1e-3)
        inside = (j > 0) & (j < L)
        inside[inside] &= times[j[inside] - 1] <= t[inside] - 10 - 2e-3
        idx = {h: i for i, h in enumerate(host_names)}
        hi = np.array([idx.get(h, -1) for h in sample["host"].to_list()])
        inside &= hi >= 0
        expect = host_step[j[inside], hi[inside]]
        assert np.allclose(sample["value"].to_numpy()[inside], np.round(expect, 6), atol=2e-6)
        checked += int(inside.sum())
    assert checked > 10_000
    wide = _rows(root / "on" / "truth" / "job_slowdowns.csv")
    assert {r["kind"] for r in wide} == {"checkpoint", "storage"}
    # every rank slows down together: the ranks' median rises, and no rank is flagged for it
    for r in wide:
        times, step, *_ = lines[(r["job_id"], r["instance"])]
        on = (times > _when(r["start"]) + 1) & (times <= _when(r["end"]) + 1)
        if float(r["factor"]) >= 1.5 and on.any():
            assert np.median(step[on]) > 1.3 * np.median(step)
