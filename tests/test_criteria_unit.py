"""The CDF similarity, Algorithm 2, the noise check and the metrics catalog, on hand-made samples."""
import numpy as np
import polars as pl
import pytest

from analysis.criteria import catalog, similarity as sim
from analysis.criteria.learn import CriteriaConfig, learn_family

RNG = np.random.default_rng(7)


def test_distance_is_the_area_between_the_empirical_cdfs():
    a, b = RNG.normal(100, 3, 50), RNG.normal(97, 5, 50)
    grid = np.linspace(min(a.min(), b.min()) - 1, max(a.max(), b.max()) + 1, 200_001)
    fa = np.searchsorted(np.sort(a), grid, side="right") / len(a)
    fb = np.searchsorted(np.sort(b), grid, side="right") / len(b)
    area = np.abs(fa - fb).sum() * (grid[1] - grid[0])
    d = 1 - sim.similarity(np.sort(a), np.sort(b))[0]
    assert d * max(a.max(), b.max()) == pytest.approx(area, rel=1e-3)


def test_single_values_compare_as_relative_difference_and_only_worse_counts():
    assert sim.similarity(np.array([[95.0]]), np.array([100.0]))[0] == pytest.approx(0.95)
    assert sim.one_sided_similarity(np.array([[90.0], [120.0]]), np.array([100.0]), "higher") == \
        pytest.approx([0.9, 1.0])
    # lower is better: 10% slower is 100/110, faster is perfect
    assert sim.one_sided_similarity(np.array([[110.0], [80.0]]), np.array([100.0]), "lower") == \
        pytest.approx([100 / 110, 1.0])


def test_algorithm_2_drops_the_defects_and_keeps_the_fleet():
    x = np.concatenate([RNG.normal(100, 0.5, 95), [70, 72, 60, 80, 75]])[:, None]
    criterion, kept = sim.learn_criterion(x, 0.95)
    assert not kept[95:].any() and kept[:95].all()
    assert criterion[0] == pytest.approx(100, abs=0.3)
    assert (sim.similarity(x[kept], criterion) >= 0.95).all()


def test_repeatability_is_mean_pairwise_similarity():
    assert sim.repeatability(np.full((10, 1), 5.0)) == 1.0
    x = np.array([[100.0], [90.0]])
    assert sim.repeatability(x) == pytest.approx(0.9)


@pytest.mark.parametrize("make, status", [
    (lambda r: r.normal(100, 0.5, 2000), "ok"),
    (lambda r: r.normal(100, 1.8, 2000), "loose"),  # ~2% healthy spread: judged at a wider threshold
    (lambda r: r.normal(100, 4, 2000), "noisy"),
    (lambda r: 100 * np.exp(r.standard_t(2, 2000) * 0.004), "noisy"),  # heavy tails: p99 latencies
    (lambda r: np.concatenate([r.normal(100, 0.3, 1000), r.normal(80, 0.3, 1000)]), "bimodal"),
    (lambda r: np.round(r.normal(1.0, 0.002, 2000), 1) + 0.1 * (r.random(2000) < 0.02), "coarse"),
])
@pytest.mark.parametrize("seed", [1, 2])
def test_noise_check_decides_what_can_be_judged(make, status, seed):
    out = learn_family(make(np.random.default_rng(seed))[:, None], "higher", CriteriaConfig())
    assert out["status"] == status, out["reason"]
    if status == "loose":
        assert 0.9 <= out["alpha"] < 0.95 and out["alpha"] == pytest.approx(1 - 4.5 * out["sigma"], abs=1e-3)


def test_catalog_directions_flags_and_the_name_rule(tmp_path):
    rules = catalog.load()
    got = {r["name"]: r for r in catalog.classify(
        ["gemm-flops/fp16_tc_flops", "kernel-launch/event_time", "mem-bw/return_code", "gpu-burn/gpu_3_pass",
         "monitor/gpu_temperature", "mystery/allreduce_latency_us", "mystery/tokens_per_s"], rules).iter_rows(named=True)}
    assert got["gemm-flops/fp16_tc_flops"]["direction"] == "higher" and not got["gemm-flops/fp16_tc_flops"]["guessed"]
    assert got["kernel-launch/event_time"]["direction"] == "lower"
    assert got["mem-bw/return_code"]["kind"] == "flag" and got["mem-bw/return_code"]["pass_value"] == 0
    assert got["gpu-burn/gpu_3_pass"]["pass_value"] == 1
    assert got["monitor/gpu_temperature"]["kind"] == "info"
    assert got["mystery/allreduce_latency_us"]["direction"] == "lower" and got["mystery/allreduce_latency_us"]["guessed"]
    assert got["mystery/tokens_per_s"]["direction"] == "higher" and got["mystery/tokens_per_s"]["guessed"]
    own = tmp_path / "metrics.yaml"
    own.write_text("metrics:\n  - {match: '^mystery/tokens_per_s$', kind: info}\n")
    assert catalog.classify(["mystery/tokens_per_s"], catalog.load(own))["kind"][0] == "info"
    own.write_text("metrics:\n  - {match: '^x/(', kind: measure, direction: higher}\n")
    with pytest.raises(catalog.CatalogError, match="not a regular expression"):
        catalog.load(own)
    own.write_text("metrics:\n  - {match: '^x/y$', kind: measure}\n")
    with pytest.raises(catalog.CatalogError, match="direction"):
        catalog.load(own)


def test_every_builtin_entry_is_reachable():
    """No catalog entry is shadowed by an earlier, broader one."""
    rules = catalog.load()
    samples = ["a/return_code", "gpu-burn/gpu_0_pass", "gpu-burn/abort", "nccl-tests:allreduce/wrong_oop",
               "gpu-burn/time", "disk-benchmark/nvme0n1_seq_read_bs", "disk-benchmark/nvme0n1_seq_read_write_iops",
               "monitor/gpu_power", "gemm-flops/fp16_flops", "gpu-burn/gpu_gflops", "matmul/nosharding_forward_time",
               "cublas-function/name_x_time", "kernel-launch/wall_overhead", "mem-bw/h2d_bw", "mem-bw/H2D_Mem_BW",
               "gpu-copy-bw:perf/gpu0_to_cpu_by_dma_bw", "gpu-stream/stream_copy_bw", "nvbandwidth/host_to_device_bw",
               "cpu-memory-bw-latency/mem_max_bw", "cpu-memory-bw-latency/mem_latency_matrix_numa_0_0_lat",
               "ib-loopback/ib_write_bw_8", "ib-traffic/ib_write_bw", "nccl-bw:ib/allreduce_8_busbw",
               "nccl-bw:ib/allreduce_8_time", "nccl-tests:allreduce/busbw_oop@8", "nccl-tests:allreduce/time_us_ip@8",
               "disk-benchmark/nvme0n1_rand_read_read_iops", "disk-benchmark/nvme0n1_rand_read_read_lat_ns_99.0",
               "model-benchmarks:bert/pytorch-bert-large/fp16_train_throughput",
               "model-benchmarks:bert/pytorch-bert-large/fp16_train_step_time", "ort-inference/fp16_vgg11_time",
               "tensorrt-inference/resnet50_gpu_time_mean"]
    hit = set()
    for name in samples:
        hit.add(next(i for i, r in enumerate(rules) if r.pattern.search(name)))
    assert hit == set(range(len(rules)))


def test_two_skus_get_a_criterion_each(tmp_path):
    """Nodes of two SKUs (80 and 100 GB/s healthy): one fleet-wide criterion would fail every slower
    node; per group, each SKU is judged against its own, and the exports come per group."""
    from datetime import datetime

    from analysis.criteria import run as criteria_run, superbench

    r = np.random.default_rng(3)
    hosts = [f"a{i:03d}" for i in range(40)] + [f"b{i:03d}" for i in range(40)]
    level = np.array([100.0] * 40 + [80.0] * 40) * (1 + 0.004 * r.standard_normal(80))
    level[5] *= 0.7  # one bad node of SKU a
    smp = pl.DataFrame({"run_id": "r1", "run_time": datetime(2024, 5, 1), "host": hosts, "benchmark": "mem-bw",
                        "metric": "h2d_bw", "rank": -1, "width": 1, "value": level,
                        "q": pl.Series([None] * 80, dtype=pl.List(pl.Float64))})
    pooled = criteria_run.compute(smp)
    assert pooled.criteria["status"][0] == "bimodal"  # two healthy levels: not judged
    groups = pl.DataFrame({"host": hosts, "group": ["sku-a"] * 40 + ["sku-b"] * 40})
    split = criteria_run.compute(smp, groups=groups)
    assert split.criteria.sort("group")["status"].to_list() == ["ok", "ok"]
    failed = split.verdicts.filter(pl.col("verdict") == "fail")["host"].to_list()
    assert failed == ["a005"]
    paths = superbench.write(tmp_path, split.criteria, pl.DataFrame({"benchmark": ["mem-bw"], "metric": ["h2d_bw"],
                                                                      "rank": [-1]}), {"version": split.version})
    assert {"rules-sku-a.yaml", "rules-sku-b.yaml", "baseline-sku-a.json", "baseline-sku-b.json"} <= set(paths)
