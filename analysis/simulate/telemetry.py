"""Per-job node telemetry -> ``telemetry/job-<id>.parquet`` (long format, gpu NULL).

One sample per host per metric every ``interval_s`` over the last
``window_minutes`` of a job: DCGM-exporter GPU metrics averaged over the node's
8 A100s, node-exporter style NIC / RoCE counters summed over its 8 HCAs, and CPU
utilisation. All hosts follow the same synchronous training rhythm (periodic
dips every iteration group / checkpoint) with independent noise. A faulty host
either drifts away from its peers between ``fault_start`` and ``end`` until the
job halts (fault type nic, pcie or gpu_thermal), or, in a job that completes
(``slow``), runs slow from ``fault_start`` to the end (Minder's fail-slow case:
its own signature, while its peers wait on it). Decoys, never faults: 1-2 other
hosts get a 20-60 s spike (kind jitter); half the jobs shift level on every
host at once for a while (kind shift: an evaluation phase, a new data shard);
in a quarter one healthy host's exporter stops reporting (kind stopped). ~0.5%
of samples are dropped. Everything is vectorised per job.
"""
from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from pathlib import Path

import numpy as np
import polars as pl

from analysis.telemetry.truth import TRUTH_SCHEMA

# metric -> (training level, relative noise, dip factor during the periodic sync dip, floor, ceiling)
METRICS: dict[str, tuple[float, float, float, float, float]] = {
    "DCGM_FI_DEV_GPU_UTIL": (96.0, 0.015, 0.55, 0.0, 100.0),            # %, mean of 8 GPUs
    "DCGM_FI_DEV_SM_CLOCK": (1395.0, 0.006, 1.0, 210.0, 1410.0),        # MHz (A100 max 1410)
    "DCGM_FI_PROF_NVLINK_TX_BYTES": (9.0e10, 0.04, 0.3, 0.0, 3.0e11),   # bytes/s per GPU
    "DCGM_FI_PROF_PCIE_TX_BYTES": (1.1e10, 0.05, 0.4, 0.0, 2.6e10),     # bytes/s per GPU (GPUDirect RDMA)
    "node_infiniband_port_data_transmitted_bytes_rate": (8.5e10, 0.04, 0.3, 0.0, 2.0e11),  # bytes/s, 8 HCAs
    "node_ethtool_rx_prio3_pause_rate": (12.0, 0.6, 0.5, 0.0, 1e7),     # PFC pause frames/s, 8 ports
    "node_infiniband_np_ecn_marked_roce_packets_rate": (900.0, 0.3, 0.4, 0.0, 1e8),  # ECN-marked packets/s
    "node_cpu_util_percent": (38.0, 0.05, 1.3, 0.0, 100.0),             # % of all cores
}
NAMES = list(METRICS)
M = {name: i for i, name in enumerate(NAMES)}
# fault type -> metric -> multiplicative factor at full severity
FAULTS: dict[str, dict[str, float]] = {
    "nic": {"node_infiniband_port_data_transmitted_bytes_rate": 0.35, "DCGM_FI_PROF_PCIE_TX_BYTES": 0.45,
            "node_ethtool_rx_prio3_pause_rate": 40.0, "node_infiniband_np_ecn_marked_roce_packets_rate": 8.0,
            "DCGM_FI_DEV_GPU_UTIL": 0.6},
    "pcie": {"DCGM_FI_PROF_PCIE_TX_BYTES": 0.3, "node_infiniband_port_data_transmitted_bytes_rate": 0.5,
             "DCGM_FI_DEV_GPU_UTIL": 0.55, "node_cpu_util_percent": 1.6},
    "gpu_thermal": {"DCGM_FI_DEV_SM_CLOCK": 0.62, "DCGM_FI_PROF_NVLINK_TX_BYTES": 0.6,
                    "DCGM_FI_DEV_GPU_UTIL": 0.8},
}
# fail-slow type (the job completes) -> (peers, own): metric -> factor at full severity. A synchronous
# job runs at its slowest member's pace, so every host shows ``peers`` (waiting on it); the slow host
# shows ``own`` on top, its signature (a throttled GPU stays busy; a bad NIC pauses; a downgraded PCIe
# link moves less and costs CPU).
_U, _CLK, _NVL, _PCI, _IB, _PFC, _ECN, _CPU = (
    "DCGM_FI_DEV_GPU_UTIL", "DCGM_FI_DEV_SM_CLOCK", "DCGM_FI_PROF_NVLINK_TX_BYTES", "DCGM_FI_PROF_PCIE_TX_BYTES",
    "node_infiniband_port_data_transmitted_bytes_rate", "node_ethtool_rx_prio3_pause_rate",
    "node_infiniband_np_ecn_marked_roce_packets_rate", "node_cpu_util_percent")
SLOW: dict[str, tuple[dict[str, float], dict[str, float]]] = {
    "slow_gpu": ({_U: 0.85, _NVL: 0.8, _PCI: 0.85, _IB: 0.85}, {_CLK: 0.8, _U: 1.15}),
    "slow_nic": ({_U: 0.8, _NVL: 0.85, _PCI: 0.75, _IB: 0.7}, {_PFC: 6.0, _ECN: 4.0, _CPU: 1.15}),
    "slow_pcie": ({_U: 0.85, _NVL: 0.85, _IB: 0.8}, {_PCI: 0.6, _CPU: 1.3}),
}
# the two exporters a host runs: a stopped one takes its metrics away
EXPORTERS = {"dcgm": [n for n in METRICS if n.startswith("DCGM_")],
             "node": [n for n in METRICS if not n.startswith("DCGM_")]}
DROP_P = 0.005


@dataclass
class TelemetryJob:
    job_id: str
    hosts: list[str]
    start: datetime
    end: datetime
    faulty_host: str | None  # machine whose metrics drift before the job halts (or that runs slow)
    fault_start: datetime | None  # drift begins (a few minutes before `end`; earlier when slow)
    slow: bool = False  # fail-slow: the job completes; the machine runs slow from fault_start to the end


def _naive_utc(t: datetime) -> datetime:
    return t.astimezone(timezone.utc).replace(tzinfo=None) if t.tzinfo else t


def _series(job: TelemetryJob, rng: np.random.Generator, interval_s: int, window_minutes: int):
    """(times, values[n_t, n_h, n_m], truth rows) for one job."""
    start, end = _naive_utc(job.start), _naive_utc(job.end)
    t0 = max(start, end - timedelta(minutes=window_minutes))
    n_t = int((end - t0).total_seconds() // interval_s) + 1
    secs = np.arange(n_t) * interval_s
    times = [t0 + timedelta(seconds=int(s)) for s in secs]
    n_h, n_m = len(job.hosts), len(NAMES)
    level, noise, dip, lo, hi = (np.array([METRICS[k][i] for k in NAMES]) for i in range(5))
    # synchronous rhythm: a dip every `period` seconds lasting ~1-2 samples, shared by all hosts
    period = float(rng.uniform(90, 240))
    dip_len = float(rng.uniform(1.0, 2.0)) * interval_s
    phase = float(rng.uniform(0, period))
    in_dip = ((secs + phase) % period) < dip_len
    job_scale = 1 + np.minimum(0.05, noise) * rng.normal(size=n_m)  # model/parallelism dependent level per job
    host_bias = 1 + 0.3 * noise * rng.normal(size=(n_h, n_m))
    shape = np.where(in_dip[:, None], dip[None, :], 1.0)  # (n_t, n_m)
    vals = (level * job_scale)[None, None, :] * shape[:, None, :] * host_bias[None]
    heavy = noise > 0.2  # counters with bursty (log-normal) noise
    eps = rng.normal(size=(n_t, n_h, n_m))
    vals = vals * np.where(heavy, np.exp(noise * eps - noise ** 2 / 2), 1 + noise * eps)
    truth: list[dict] = []
    pos = {h: i for i, h in enumerate(job.hosts)}
    if job.faulty_host is not None:
        fault_start = _naive_utc(job.fault_start) if job.fault_start else end - timedelta(minutes=5)
        f_secs = (fault_start - t0).total_seconds()
        fault = _slow if job.slow else _drift
        kind, metrics = fault(vals, secs, f_secs, (end - fault_start).total_seconds(), pos[job.faulty_host], rng,
                              interval_s)
        truth.append(dict(job_id=job.job_id, host=job.faulty_host, kind="fault", fault_type=kind,
                          metrics=",".join(metrics), start=fault_start, end=end))
    others = [h for h in job.hosts if h != job.faulty_host]
    n_jit = min(len(others), int(rng.integers(1, 3)))
    for h in (others[int(i)] for i in sorted(rng.choice(len(others), size=n_jit, replace=False))):
        name = NAMES[int(rng.integers(n_m))]
        length = int(rng.integers(20, 61))
        s0 = int(rng.integers(0, max(int(secs[-1]) - length, 0) + 1))
        hit = (secs >= s0) & (secs < s0 + length)
        if not hit.any():  # make sure the transient covers at least one sample
            s0 = int(secs[int(np.searchsorted(secs, s0)) % n_t])
            hit = secs == s0
        up = rng.random() < 0.5 and name not in ("DCGM_FI_DEV_GPU_UTIL", "DCGM_FI_DEV_SM_CLOCK")  # capped: dip
        factor = rng.uniform(1.8, 3.0) if up else rng.uniform(0.75, 0.9) if "CLOCK" in name else rng.uniform(0.3, 0.6)
        vals[hit, pos[h], M[name]] *= factor
        truth.append(dict(job_id=job.job_id, host=h, kind="jitter", fault_type=None, metrics=name,
                          start=t0 + timedelta(seconds=s0), end=t0 + timedelta(seconds=s0 + length)))
    truth += _shift(job, vals, secs, t0, rng) + _stopped(job, others, vals, secs, t0, rng)
    vals = np.clip(vals, lo, hi)
    return times, vals, truth


def _drift(vals, secs, f_secs: float, span_s: float, h: int, rng, interval_s: int) -> tuple[str, list[str]]:
    """A fault that ends the job: the machine drifts from its peers from f_secs to the halt."""
    kind = str(rng.choice(sorted(FAULTS)))
    sev = np.clip((secs - f_secs) / max(span_s, interval_s), 0, 1) ** 0.6  # 0 before the fault, 1 at the halt
    for name, factor in FAULTS[kind].items():
        f = factor ** sev  # geometric drift from 1 to `factor`
        if factor > 1:  # rising counters also get noisier
            f = f * np.exp(0.3 * sev * rng.normal(size=len(secs)))
        vals[:, h, M[name]] *= f
    return kind, list(FAULTS[kind])


def _slow(vals, secs, f_secs: float, span_s: float, h: int, rng, interval_s: int) -> tuple[str, list[str]]:
    """Fail-slow: within 30-120 s of f_secs the machine settles at a severity (half to full) it keeps to
    the end; every host shows the job's slowdown, the machine its own signature on top."""
    kind = str(rng.choice(sorted(SLOW)))
    peers, own = SLOW[kind]
    sev = float(rng.uniform(0.5, 1.0)) * np.clip((secs - f_secs) / float(rng.uniform(30, 120)), 0, 1)
    for name, factor in peers.items():
        vals[:, :, M[name]] *= (factor ** sev)[:, None]
    for name, factor in own.items():
        f = factor ** sev
        if factor > 1 and METRICS[name][1] > 0.2:  # bursty counters (pause, ECN) also get noisier
            f = f * np.exp(0.3 * sev * rng.normal(size=len(secs)))
        vals[:, h, M[name]] *= f
    return kind, list(own)


def _shift(job: TelemetryJob, vals, secs, t0: datetime, rng) -> list[dict]:
    """Half the jobs: 2-4 metrics change level on every host at once (within one sample of each other)
    for 5-30 minutes: a new phase of the job, not a machine's fault."""
    if rng.random() >= 0.5:
        return []
    names = [NAMES[int(i)] for i in sorted(rng.choice(len(NAMES), size=int(rng.integers(2, 5)), replace=False))]
    s0, length = float(rng.uniform(0, secs[-1])), float(rng.uniform(300, 1800))
    lag = rng.integers(0, 2, size=vals.shape[1]) * (secs[1] - secs[0] if len(secs) > 1 else 0)
    on = (secs[:, None] >= s0 + lag[None, :]) & (secs[:, None] < s0 + length + lag[None, :])  # (n_t, n_h)
    for name in names:
        factor = rng.uniform(0.6, 0.9) if rng.random() < 0.5 or name in (_U, _CLK) else rng.uniform(1.15, 1.5)
        vals[:, :, M[name]] *= np.where(on, factor, 1.0)
    return [dict(job_id=job.job_id, host=None, kind="shift", fault_type=None, metrics=",".join(names),
                 start=t0 + timedelta(seconds=s0), end=t0 + timedelta(seconds=min(s0 + length, float(secs[-1]))))]


def _stopped(job: TelemetryJob, others: list[str], vals, secs, t0: datetime, rng) -> list[dict]:
    """A quarter of the jobs: one healthy host's DCGM or node exporter stops reporting, for 3-15 minutes
    or to the end (its samples are not written)."""
    if rng.random() >= 0.25 or not others:
        return []
    h = job.hosts.index(others[int(rng.integers(len(others)))])
    exporter = str(rng.choice(sorted(EXPORTERS)))
    s0 = float(rng.uniform(0.1, 0.8) * secs[-1])
    s1 = float(secs[-1]) + 1 if rng.random() < 0.5 else s0 + float(rng.uniform(180, 900))
    gone = (secs >= s0) & (secs < s1)
    vals[np.ix_(gone, [h], [M[n] for n in EXPORTERS[exporter]])] = np.nan
    return [dict(job_id=job.job_id, host=job.hosts[h], kind="stopped", fault_type=exporter,
                 metrics=",".join(EXPORTERS[exporter]), start=t0 + timedelta(seconds=s0),
                 end=t0 + timedelta(seconds=min(s1, float(secs[-1]))))]


def job_frame(job: TelemetryJob, rng: np.random.Generator, interval_s: int = 10,
              window_minutes: int = 60) -> tuple[pl.DataFrame, list[dict]]:
    """One job's telemetry as long rows (time, host, metric, gpu, value) and its truth rows."""
    times, vals, truth = _series(job, rng, interval_s, window_minutes)
    n_t, n_h, n_m = vals.shape
    keep = (rng.random(vals.size) >= DROP_P) & np.isfinite(vals.reshape(-1))  # NaN: a stopped exporter
    t_idx = np.repeat(np.arange(n_t), n_h * n_m)[keep]
    h_idx = np.tile(np.repeat(np.arange(n_h), n_m), n_t)[keep]
    m_idx = np.tile(np.arange(n_m), n_t * n_h)[keep]
    frame = pl.DataFrame({
        "time": pl.Series(times, dtype=pl.Datetime("us")).gather(t_idx).dt.replace_time_zone("UTC"),
        "host": pl.Series(job.hosts, dtype=pl.Utf8).gather(h_idx),
        "metric": pl.Series(NAMES, dtype=pl.Utf8).gather(m_idx),
        "gpu": pl.Series([None] * int(keep.sum()), dtype=pl.Int32),
        "value": np.round(vals.reshape(-1)[keep], 3),
    })
    return frame, truth


def write_telemetry(out_dir: Path, jobs: list[TelemetryJob], rng: np.random.Generator,
                    interval_s: int = 10, window_minutes: int = 60) -> pl.DataFrame:
    folder = Path(out_dir) / "telemetry"
    folder.mkdir(parents=True, exist_ok=True)
    truth: list[dict] = []
    for job in jobs:
        frame, rows = job_frame(job, rng, interval_s, window_minutes)
        truth.extend(rows)
        frame.write_parquet(folder / f"job-{job.job_id}.parquet")
    return pl.DataFrame(truth, schema=TRUTH_SCHEMA)
