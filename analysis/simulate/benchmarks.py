"""Weekly SuperBench validation runs -> ``benchmarks/validation-YYYY-MM-DD/``.

Each run writes ``results-summary.jsonl`` (one object per node, SuperBench key
spellings as in the real 153-node A100 fleet export: ``gemm-flops/fp16_tc_flops:N``,
``mem-bw/h2d_bw:N``, ``ib-loopback/ib_write_bw_8388608:N``, ``nccl-bw:ib/...``) and
the raw nccl-tests stdout of one 2-node all-reduce. Healthy magnitudes and noise
(CV) come from that fleet's medians; a defective host is degraded on the metrics
its component affects, but an intermittent defect escapes a run with p=0.2.
"""
from __future__ import annotations

import json
from datetime import datetime, timedelta, timezone
from pathlib import Path

import numpy as np
import polars as pl

GPUS = 8
# family -> (median, CV, higher_is_better, decimals); per-GPU families get ':0'..':7'
PER_GPU = {
    "gemm-flops/fp16_tc_flops": (277502.0, 0.008, True, 1),
    "gemm-flops/bf16_tc_flops": (263444.0, 0.008, True, 1),
    "gemm-flops/tf32_tc_flops": (127505.0, 0.008, True, 1),
    "gemm-flops/fp64_tc_flops": (18966.0, 0.005, True, 1),
    "mem-bw/h2d_bw": (26.0, 0.005, True, 2),
    "mem-bw/d2h_bw": (25.0, 0.015, True, 2),
    "mem-bw/d2d_bw": (1155.3, 0.005, True, 1),
    "kernel-launch/event_time": (0.0057, 0.02, False, 6),
    "kernel-launch/wall_time": (0.00966, 0.02, False, 6),
    "ib-loopback/ib_write_bw_8388608": (24.8, 0.01, True, 4),
}
PER_NODE = {
    "nccl-bw:ib/allreduce_8589934592_busbw": (23.82, 0.01, True, 2),
    "nccl-bw:ib/allreduce_8589934592_algbw": (13.61, 0.01, True, 2),
    "nccl-bw:nvlink/allreduce_8589934592_busbw": (235.56, 0.005, True, 2),
    "cpu-memory-bw-latency/mem_max_bandwidth_all_reads_bw": (282346.44, 0.006, True, 2),
    "cpu-memory-bw-latency/mem_max_bandwidth_stream-triad_like_bw": (276966.29, 0.005, True, 2),
    "cpu-memory-bw-latency/mem_latency_matrix_numa_0_0_lat": (114.0, 0.015, False, 1),
    "model-benchmarks:bert/pytorch-bert-large/fp16_train_throughput": (153.58, 0.005, True, 4),
}
STEP_KEY = "model-benchmarks:bert/pytorch-bert-large/fp16_train_step_time"  # list: per-step samples (ms)
STEP_MS, STEP_CV, N_STEPS = 208.45, 0.01, 16
KEYS = [f"{f}:{g}" for f in PER_GPU for g in range(GPUS)] + list(PER_NODE)
_SPEC = [PER_GPU[k.rsplit(":", 1)[0]] if k not in PER_NODE else PER_NODE[k] for k in KEYS]
BASE = np.array([s[0] for s in _SPEC])
CV = np.array([s[1] for s in _SPEC])
HIGHER = np.array([s[2] for s in _SPEC])
DECIMALS = [s[3] for s in _SPEC]
IDX = {k: i for i, k in enumerate(KEYS)}
GEMM = [f for f in PER_GPU if f.startswith("gemm-flops/")]
NCCL_IB = ["nccl-bw:ib/allreduce_8589934592_busbw", "nccl-bw:ib/allreduce_8589934592_algbw"]
CPU_MEM = [k for k in PER_NODE if k.startswith("cpu-memory-bw-latency/")]
MISS_P, OUTLIER_P = 0.2, 0.01
COMPONENTS = ("gpu", "pcie", "dimm", "nic", "optics", "psu", "bios", "cpu")
NCCL_PEAK_BUSBW, NCCL_LAT_US = 186.0, 58.0


def _defect(component: str, rng: np.random.Generator) -> tuple[dict[str, float], float]:
    """Keys -> fractional drop for one showing defect; second value: model step-time drop."""
    g = int(rng.integers(GPUS))
    if component == "gpu":
        d = rng.uniform(0.10, 0.30)
        return {f"{f}:{g}": d * rng.uniform(0.9, 1.1) for f in GEMM}, d
    if component == "pcie":  # one or two GPUs behind the same PCIe switch (SuperBench fleet: 13 vs 25.7 GB/s)
        gpus = [g] if rng.random() < 0.5 else [g - g % 2, g - g % 2 + 1]
        return {f"mem-bw/{m}_bw:{x}": rng.uniform(0.40, 0.52) for x in gpus for m in ("h2d", "d2h")}, 0.0
    if component in ("nic", "optics"):
        d = rng.uniform(0.30, 0.60) if component == "nic" else rng.uniform(0.30, 0.60) * rng.uniform(0.8, 1.0)
        out = {f"ib-loopback/ib_write_bw_8388608:{g}": d}
        out.update({k: d * rng.uniform(0.85, 1.0) for k in NCCL_IB})
        return out, 0.0
    if component == "dimm":
        d = rng.uniform(0.10, 0.25)
        out = {k: d * rng.uniform(0.9, 1.1) for k in CPU_MEM if k.endswith("_bw")}
        out["cpu-memory-bw-latency/mem_latency_matrix_numa_0_0_lat"] = d * 0.3
        return out, 0.0
    if component in ("psu", "bios"):  # power capping: every GPU slower
        d = rng.uniform(0.05, 0.15)
        return {f"{f}:{x}": d * rng.uniform(0.9, 1.1) for f in GEMM for x in range(GPUS)}, d * 0.8
    if component == "cpu":
        d = rng.uniform(0.25, 0.45)  # launch latency x1.33-1.8
        return {f"kernel-launch/{m}:{x}": d for m in ("event_time", "wall_time") for x in range(GPUS)}, 0.03
    raise ValueError(f"unknown defect component {component!r}")


def _time_str(us: float) -> str:
    return f"{us:7.0f}" if us >= 10000 else f"{us:7.1f}" if us >= 100 else f"{us:7.2f}"


def nccl_log(hosts: list[str], busbw_scale: float, rng: np.random.Generator) -> str:
    """nccl-tests all_reduce_perf stdout for len(hosts) x 8 ranks (2.13-style layout)."""
    pids = rng.integers(10000, 99999, size=len(hosts))
    out = ["# nThread 1 nGpus 1 minBytes 8 maxBytes 8589934592 step: 2(factor) warmup iters: 5 iters: 20 "
           "agg iters: 1 validation: 1 graph: 0", "#", "# Using devices"]
    for r in range(len(hosts) * GPUS):
        h, d = divmod(r, GPUS)
        out.append(f"#  Rank {r:2d} Group  0 Pid {int(pids[h]) + d:6d} on {hosts[h]:>10s} device {d:2d} "
                   f"[0x{(0x07, 0x0f, 0x47, 0x4e, 0x87, 0x90, 0xb7, 0xbd)[d]:02x}] NVIDIA A100-SXM4-80GB")
    out += ["#", "#" + " " * 61 + "out-of-place                       in-place          ",
            "#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   "
            "busbw #wrong",
            "#        (B)    (elements)                               (us)  (GB/s)  (GB/s)            (us)  (GB/s)  "
            "(GB/s)       "]
    n = len(hosts) * GPUS
    factor = 2 * (n - 1) / n
    sizes = 8 * 2 ** np.arange(31)
    alg_peak = NCCL_PEAK_BUSBW * busbw_scale / factor
    base_us = NCCL_LAT_US + sizes / (alg_peak * 1e3)
    times = base_us[:, None] * (1 + np.abs(rng.normal(0, 0.015, size=(len(sizes), 2))))
    busbws = []
    for s, (t_oop, t_ip) in zip(sizes, times):
        cols = []
        for t in (t_oop, t_ip):
            alg = s / (t * 1e3)
            busbws.append(alg * factor)
            cols.append(f"  {_time_str(t)}  {alg:6.2f}  {alg * factor:6.2f}  {0:5d}")
        out.append(f"{int(s):12d}  {int(s) // 4:12d}  {'float':>8s}  {'sum':>6s}  {-1:6d}" + "".join(cols))
    out += ["# Out of bounds values : 0 OK", f"# Avg bus bandwidth    : {np.mean(busbws):.4f} ", "#", ""]
    return "\n".join(out)


def write_benchmarks(out_dir: Path, hosts: list[str], defects: dict[str, str], start: datetime, days: int,
                     rng: np.random.Generator, every_days: int = 7) -> pl.DataFrame:
    if start.tzinfo is not None:
        start = start.astimezone(timezone.utc).replace(tzinfo=None)
    first = datetime(start.year, start.month, start.day, 22)
    end = start + timedelta(days=days)
    truth: dict[str, list] = {c: [] for c in ("run_time", "run_id", "host", "defective", "component",
                                              "metrics_affected")}
    bad = {c for c in defects.values()} - set(COMPONENTS)
    if bad:
        raise ValueError(f"unknown defect component(s) {sorted(bad)}; expected one of {COMPONENTS}")
    is_def = np.array([h in defects for h in hosts])
    n = len(hosts)
    bias = 0.5 * CV * rng.normal(0, 1, size=(n, len(KEYS)))  # per-host offset that persists across runs
    run_time = first
    while run_time < end:
        run_id = f"validation-{run_time:%Y-%m-%d}"
        folder = Path(out_dir) / "benchmarks" / run_id
        folder.mkdir(parents=True, exist_ok=True)
        vals = BASE * (1 + bias + 0.85 * CV * rng.normal(0, 1, size=(n, len(KEYS))))
        steps = STEP_MS * (1 + STEP_CV * rng.normal(0, 1, size=(n, 1))) * (1 + 0.004 * rng.normal(size=(n, N_STEPS)))
        shows = is_def & (rng.random(n) >= MISS_P)
        outlier = ~is_def & (rng.random(n) < OUTLIER_P)
        affected = [""] * n
        for i in np.flatnonzero(shows | outlier):
            if shows[i]:
                drops, step_drop = _defect(defects[hosts[i]], rng)
            else:
                key = KEYS[int(rng.integers(len(KEYS)))]
                drops, step_drop = {key: rng.uniform(0.08, 0.25)}, 0.0
            for k, d in drops.items():
                j = IDX[k]
                vals[i, j] = vals[i, j] * (1 - d) if HIGHER[j] else vals[i, j] / (1 - d)
            if step_drop:
                steps[i] /= 1 - step_drop
                drops[STEP_KEY] = step_drop
                tp = IDX["model-benchmarks:bert/pytorch-bert-large/fp16_train_throughput"]
                vals[i, tp] *= 1 - step_drop
                drops["model-benchmarks:bert/pytorch-bert-large/fp16_train_throughput"] = step_drop
            affected[i] = ",".join(sorted(drops))
        stamp = f"{run_time:%Y-%m-%dT%H:%M:%S}Z"
        with open(folder / "results-summary.jsonl", "w") as fh:
            for host, row, step_row in zip(hosts, vals.tolist(), steps.tolist()):  # Python floats: as float(v) gave
                obj = {"node": host, "timestamp": stamp}
                obj.update({k: round(v, dec) for k, v, dec in zip(KEYS, row, DECIMALS)})
                obj[STEP_KEY] = [round(x, 3) for x in step_row]
                fh.write(json.dumps(obj) + "\n")
        pair = [hosts[int(j)] for j in sorted(rng.choice(n, size=min(2, n), replace=False))]
        scale = 1.0
        for h in pair:
            i = hosts.index(h)
            if "nccl-bw:ib/allreduce_8589934592_busbw" in affected[i].split(","):
                scale = min(scale, vals[i, IDX["nccl-bw:ib/allreduce_8589934592_busbw"]] / BASE[IDX[NCCL_IB[0]]])
        (folder / "nccl-all_reduce_perf.log").write_text(nccl_log(pair, scale, rng))
        comp = [defects.get(h) for h in hosts]
        for c, v in (("run_time", [run_time] * n), ("run_id", [run_id] * n), ("host", hosts),
                     ("defective", shows.tolist()), ("component", comp), ("metrics_affected", affected)):
            truth[c].extend(v)
        run_time += timedelta(days=every_days)
    return pl.DataFrame(truth, schema={"run_time": pl.Datetime("us"), "run_id": pl.Utf8, "host": pl.Utf8,
                                       "defective": pl.Boolean, "component": pl.Utf8, "metrics_affected": pl.Utf8})
