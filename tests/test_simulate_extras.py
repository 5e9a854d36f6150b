"""Simulated SuperBench runs and job telemetry parse cleanly and carry their injected truth."""
from datetime import datetime, timedelta

import numpy as np
import polars as pl
import pytest

from analysis.ingest.contract import ParseContext
from analysis.ingest.parsers import benchmarks, telemetry
from analysis.simulate.benchmarks import KEYS, STEP_KEY, write_benchmarks
from analysis.simulate.telemetry import EXPORTERS, METRICS, SLOW, TelemetryJob, write_telemetry
from conftest import parse_file

HOSTS = [f"gpu{i:03d}" for i in range(1, 17)]
DEFECTS = {"gpu004": "pcie", "gpu011": "nic"}
START = datetime(2024, 3, 1)


def _bench(tmp_path, seed=7):
    return write_benchmarks(tmp_path, HOSTS, DEFECTS, START, days=14, rng=np.random.default_rng(seed))


def test_benchmarks_parse_without_rejects(tmp_path):
    truth = _bench(tmp_path)
    assert truth["run_id"].unique().sort().to_list() == ["validation-2024-03-01", "validation-2024-03-08"]
    assert truth.height == 2 * len(HOSTS) and truth["run_time"].min() == datetime(2024, 3, 1, 22)
    files = sorted((tmp_path / "benchmarks").rglob("*"))
    files = [f for f in files if f.is_file()]
    assert len(files) == 4
    for path in files:
        result, counts = parse_file(benchmarks.parse, path, "benchmarks")
        rows = result.tables["benchmark_results"]
        assert counts.rejects == 0 and rows.height > 0, path
        if path.name == "results-summary.jsonl":
            assert result.format == "superbench-jsonl" and counts.row_lines == len(HOSTS)
            assert rows["run_time"].null_count() == 0 and rows["host"].n_unique() == len(HOSTS)
            assert rows.height == len(HOSTS) * (len(KEYS) + 16)
            steps = rows.filter(pl.col("metric") == STEP_KEY.split("/", 1)[1])
            assert steps["sample_idx"].max() == 15
        else:
            assert result.format == "nccl-tests"
            assert rows["benchmark"][0] == "nccl-tests:allreduce" and "," in rows["host"][0]
            avg = rows.filter(pl.col("metric") == "avg_busbw")["value"].to_list()
            big = rows.filter((pl.col("size_bytes") == 8589934592) & (pl.col("metric") == "busbw_oop"))["value"][0]
            assert len(avg) == 1 and 20 < avg[0] < big <= 200
            slow_nic = truth.filter((pl.col("run_id") == path.parent.name) & pl.col("host").is_in(
                rows["host"][0].split(",")) & pl.col("defective") & (pl.col("component") == "nic"))
            assert (big < 140) if slow_nic.height else (big > 165), (big, slow_nic)


def _values(tmp_path):
    frames = []
    for path in sorted((tmp_path / "benchmarks").rglob("results-summary.jsonl")):
        rows = parse_file(benchmarks.parse, path, "benchmarks")[0].tables["benchmark_results"]
        frames.append(rows.with_columns(run_id=pl.lit(path.parent.name)))
    return pl.concat(frames).with_columns(
        key=pl.format("{}/{}", "benchmark", "metric")
        + pl.when(pl.col("rank").is_not_null()).then(pl.format(":{}", "rank")).otherwise(pl.lit("")))


def test_benchmark_defects_show_intended_margin(tmp_path):
    truth = _bench(tmp_path)
    vals = _values(tmp_path).filter(pl.col("sample_idx").is_null())
    shown = truth.filter(pl.col("defective"))
    assert shown.height >= 1 and set(shown["component"]) <= set(DEFECTS.values())
    assert truth.filter(~pl.col("host").is_in(list(DEFECTS)))["component"].null_count() == 2 * (len(HOSTS) - 2)
    margins = {"pcie": (0.35, 0.6), "nic": (0.25, 0.65)}
    for row in shown.iter_rows(named=True):
        keys = row["metrics_affected"].split(",")
        key = next(k for k in keys if k.startswith(("mem-bw/h2d_bw", "ib-loopback/")))
        run = vals.filter((pl.col("run_id") == row["run_id"]) & (pl.col("key") == key))
        mine = run.filter(pl.col("host") == row["host"])["value"][0]
        median = run.filter(pl.col("host") != row["host"])["value"].median()
        lo, hi = margins[row["component"]]
        assert lo < 1 - mine / median < hi, (row, mine, median)
    # healthy noise stays within a few percent of the fleet median
    healthy = vals.join(truth.filter(pl.col("metrics_affected") == "").select("run_id", "host"),
                        on=["run_id", "host"])
    cv = healthy.group_by("run_id", "key").agg((pl.col("value").std() / pl.col("value").mean()).alias("cv"))
    assert cv["cv"].max() < 0.06 and 0.003 < cv["cv"].median() < 0.02


def test_benchmarks_deterministic(tmp_path):
    a, b = tmp_path / "a", tmp_path / "b"
    ta, tb = _bench(a, seed=3), _bench(b, seed=3)
    assert ta.equals(tb)
    for path in sorted(a.rglob("*.*")):
        assert path.read_bytes() == (b / path.relative_to(a)).read_bytes()


def test_benchmarks_reject_unknown_component(tmp_path):
    with pytest.raises(ValueError, match="unknown defect component"):
        write_benchmarks(tmp_path, HOSTS, {"gpu001": "fan"}, START, 7, np.random.default_rng(0))


def _job(end=datetime(2024, 3, 2, 12)):
    hosts = [f"gpu{i:03d}" for i in range(1, 9)]
    return TelemetryJob("42", hosts, end - timedelta(minutes=90), end, "gpu005", end - timedelta(minutes=4))


def test_telemetry_parses_and_fault_drifts(tmp_path):
    job = _job()
    truth = write_telemetry(tmp_path, [job], np.random.default_rng(5), interval_s=10, window_minutes=20)
    path = tmp_path / "telemetry" / "job-42.parquet"
    result = telemetry.parse_parquet(path.read_bytes(), ParseContext(path=path, source="telemetry", host_hint=None))
    rows = result.tables["telemetry"]
    assert result.rejects.height == 0
    full = 121 * 8 * len(METRICS)
    assert 0.98 * full < rows.height < full and rows["gpu"].null_count() == rows.height
    assert rows["time"].min() == job.end - timedelta(minutes=20) and rows["time"].max() == job.end
    assert set(rows["metric"]) == set(METRICS)
    fault = truth.filter(pl.col("kind") == "fault").row(0, named=True)
    assert fault["host"] == "gpu005" and fault["start"] == job.fault_start and fault["end"] == job.end
    jitter = truth.filter(pl.col("kind") == "jitter")
    assert 1 <= jitter.height <= 2 and "gpu005" not in jitter["host"].to_list()
    assert (jitter["end"] - jitter["start"]).dt.total_seconds().is_between(20, 60).all()
    for metric in fault["metrics"].split(","):
        part = rows.filter(pl.col("metric") == metric)
        med = part.filter(pl.col("host") != fault["host"]).group_by("time").agg(med=pl.col("value").median())
        dev = (part.filter(pl.col("host") == fault["host"]).join(med, on="time")
               .with_columns(rel=(pl.col("value") / pl.col("med")).log().abs(),
                             late=pl.col("time") >= fault["start"] + timedelta(minutes=2)))
        before = dev.filter(pl.col("time") < fault["start"])["rel"].mean()
        late = dev.filter(pl.col("late"))["rel"].mean()
        assert late > 3 * before and late > 0.15, (metric, before, late)


def test_telemetry_jitter_is_visible_and_deterministic(tmp_path):
    truth = write_telemetry(tmp_path / "a", [_job()], np.random.default_rng(9), window_minutes=20)
    write_telemetry(tmp_path / "b", [_job()], np.random.default_rng(9), window_minutes=20)
    pa, pb = (tmp_path / x / "telemetry" / "job-42.parquet" for x in "ab")
    assert pl.read_parquet(pa).equals(pl.read_parquet(pb))
    rows = pl.read_parquet(pa).with_columns(pl.col("time").dt.replace_time_zone(None))
    for j in truth.filter(pl.col("kind") == "jitter").iter_rows(named=True):
        part = rows.filter(pl.col("metric") == j["metrics"])
        inside = pl.col("time").is_between(j["start"], j["end"], closed="left")
        med = part.filter(pl.col("host") != j["host"]).group_by("time").agg(med=pl.col("value").median())
        mine = part.filter((pl.col("host") == j["host"]) & inside).join(med, on="time")
        assert mine.height >= 1
        assert ((mine["value"] / mine["med"]).log().abs() > 0.09).any(), j


def _level(rows: pl.DataFrame, metric: str, hosts, since, until) -> float:
    """The median over time of the hosts' median value (the periodic dips are a sample or two)."""
    part = rows.filter((pl.col("metric") == metric) & pl.col("host").is_in(hosts) & (pl.col("time") >= since)
                       & (pl.col("time") < until))
    return part.group_by("time").agg(pl.col("value").median())["value"].median()


def test_telemetry_fail_slow_and_decoys(tmp_path):
    """A machine that runs slow in a job that completes stands apart on its own signature while every
    host shows the job's slowdown; a job-wide shift moves every host at once; a stopped exporter leaves
    its host's metrics without samples."""
    end = datetime(2024, 3, 2, 12)
    jobs = [TelemetryJob(str(40 + i), HOSTS, end - timedelta(hours=2), end, "gpu005" if i == 0 else None,
                         end - timedelta(minutes=12) if i == 0 else None, slow=i == 0) for i in range(12)]
    truth = write_telemetry(tmp_path, jobs, np.random.default_rng(3), window_minutes=30)
    read = lambda j: pl.read_parquet(tmp_path / "telemetry" / f"job-{j}.parquet").with_columns(  # noqa: E731
        pl.col("time").dt.replace_time_zone(None))
    fault = truth.filter(pl.col("kind") == "fault").row(0, named=True)
    assert fault["job_id"] == "40" and fault["fault_type"] in SLOW and fault["host"] == "gpu005"
    assert fault["start"] == jobs[0].fault_start and fault["end"] == end
    peers, own = SLOW[fault["fault_type"]]
    assert fault["metrics"].split(",") == list(own)
    rows, others = read(40), [h for h in HOSTS if h != "gpu005"]
    shift_rows = truth.filter((pl.col("job_id") == "40") & (pl.col("kind") == "shift"))
    shifted = set(",".join(shift_rows["metrics"]).split(","))
    late, t0 = fault["start"] + timedelta(minutes=3), end - timedelta(minutes=30)
    for metric, factor in own.items():  # the slow machine against its peers, after the onset
        ratio = _level(rows, metric, ["gpu005"], late, end) / _level(rows, metric, others, late, end)
        before = _level(rows, metric, ["gpu005"], t0, fault["start"]) / _level(rows, metric, others, t0, fault["start"])
        assert abs(np.log(ratio / before)) > 0.4 * abs(np.log(factor)), (metric, ratio, before)
    for metric, factor in peers.items():  # the job's slowdown, on every host
        if metric not in shifted and metric not in own:
            drop = _level(rows, metric, others, late, end) / _level(rows, metric, others, t0, fault["start"])
            assert drop < 1 - 0.3 * (1 - factor), (metric, drop)
    kinds = truth.filter(pl.col("job_id") != "40")
    shifts, stopped = kinds.filter(pl.col("kind") == "shift"), kinds.filter(pl.col("kind") == "stopped")
    assert shifts.height >= 2 and stopped.height >= 1 and kinds.filter(pl.col("kind") == "fault").height == 0
    checked = 0
    for r in shifts.iter_rows(named=True):  # against the longer stretch before or after it
        rows = read(r["job_id"])
        ref = (t0, r["start"]) if r["start"] - t0 > end - r["end"] else (r["end"], end)
        if min(ref[1] - ref[0], r["end"] - r["start"]) < timedelta(minutes=2):
            continue
        checked += 1
        for metric in r["metrics"].split(","):
            moved = _level(rows, metric, HOSTS, r["start"] + timedelta(seconds=20), r["end"] - timedelta(seconds=20)) \
                / _level(rows, metric, HOSTS, *ref)
            assert abs(np.log(moved)) > 0.08, (r, metric, moved)
    assert checked >= 2
    for r in stopped.iter_rows(named=True):
        rows = read(r["job_id"]).filter((pl.col("host") == r["host"]) & pl.col("time").is_between(r["start"], r["end"],
                                                                                                 closed="left"))
        assert r["metrics"].split(",") == EXPORTERS[r["fault_type"]]
        assert rows.height > 0 and set(rows["metric"]).isdisjoint(r["metrics"].split(","))
