"""One job's telemetry -> an aligned, min-max normalised array cut into windows (Minder §4.1).

Rows are (time, host, metric, value). A value that is not a finite,
non-negative number (every metric here is a rate, a level or a percentage) is
dropped and counted. Samples are placed on the job's common clock (its
median sampling interval); several samples in one slot (duplicate
timestamps) are averaged; a slot with none takes the nearest sample of the
same host and metric when one lies within ``max_fill_s``, else stays missing:
a machine that stopped reporting is missing data, never healthy. Each metric
is scaled to [0, 1] over the job (min-max over all its machines and times),
then cut into windows of ``window_s`` every ``stride_s``.
"""
from __future__ import annotations

import warnings
from dataclasses import dataclass, field

import numpy as np
import polars as pl
from analysis.settings import FrameConfig


@dataclass
class JobFrame:
    job_id: str
    hosts: list[str]
    metrics: list[str]
    t0: np.datetime64
    interval_s: float
    values: np.ndarray  # (n_metrics, n_hosts, n_times), in [0, 1], NaN = missing
    dropped: dict = field(default_factory=dict)  # reason -> rows

    def window_len(self, cfg: FrameConfig) -> int:
        """Samples per window."""
        return max(1, int(round(cfg.window_s / self.interval_s)))

    def starts(self, cfg: FrameConfig) -> np.ndarray:
        """The windows' start offsets in samples (none when the job is shorter than a window)."""
        step = max(1, int(round(cfg.stride_s / self.interval_s)))
        return np.arange(0, max(self.values.shape[2] - self.window_len(cfg) + 1, 0), step)

    def windows(self, cfg: FrameConfig) -> tuple[np.ndarray, np.ndarray]:
        """(n_metrics, n_hosts, n_windows, W) and the windows' start offsets in samples."""
        starts = self.starts(cfg)
        idx = starts[:, None] + np.arange(self.window_len(cfg))[None, :]
        return self.values[:, :, idx], starts

    def time_of(self, sample: int | np.ndarray) -> np.ndarray:
        return self.t0 + (np.asarray(sample) * self.interval_s * 1e6).astype("timedelta64[us]")


def _nearest_fill(x: np.ndarray, max_gap: int) -> np.ndarray:
    """Fill NaN along the last axis from the nearest finite sample no more than max_gap away."""
    n = x.shape[-1]
    idx = np.arange(n)
    finite = np.isfinite(x)
    # index of the last finite sample at or before t, and of the next at or after t
    prev = np.where(finite, idx, -1)
    prev = np.maximum.accumulate(prev, axis=-1)
    nxt = np.where(finite, idx, n)
    nxt = np.flip(np.minimum.accumulate(np.flip(nxt, -1), axis=-1), -1)
    d_prev = np.where(prev >= 0, idx - prev, n + 1)
    d_next = np.where(nxt < n, nxt - idx, n + 1)
    use_prev = d_prev <= d_next
    src = np.where(use_prev, prev, nxt)
    dist = np.minimum(d_prev, d_next)
    ok = ~finite & (dist <= max_gap)
    out = x.copy()
    src_c = np.clip(src, 0, n - 1)
    filled = np.take_along_axis(x, src_c, axis=-1)
    out[ok] = filled[ok]
    return out


def build(job_id: str, rows: pl.DataFrame, cfg: FrameConfig = FrameConfig(),
          metrics: list[str] | None = None, hosts: list[str] | None = None) -> JobFrame | None:
    """rows: time, host, metric, value (one job's machines and span). None when nothing usable is left."""
    v = pl.col("value")
    why = (pl.when(v.is_null() | v.is_nan()).then(pl.lit("not a number"))
           .when(v.is_infinite()).then(pl.lit("infinite"))
           .when(v < 0).then(pl.lit("negative")))
    rows = rows.with_columns(why=why)
    dropped = dict(rows.filter(pl.col("why").is_not_null()).group_by("why").len().iter_rows())
    rows = rows.filter(pl.col("why").is_null() & pl.col("time").is_not_null())
    if rows.height == 0:
        return None
    hosts = hosts or sorted(rows["host"].unique().to_list())
    metrics = metrics or sorted(rows["metric"].unique().to_list())
    t0 = rows["time"].min()
    secs = (rows["time"] - t0).dt.total_microseconds() / 1e6
    interval = cfg.interval_s
    if interval is None:
        steps = (rows.select(pl.col("time").unique().sort()).to_series().diff().dt.total_microseconds() / 1e6)
        steps = steps.filter(steps > 0)
        interval = float(steps.median()) if steps.len() else 1.0
    rows = rows.with_columns(t=(secs / interval).round().cast(pl.Int64))
    n_t = int(rows["t"].max()) + 1
    h_ix = pl.DataFrame({"host": hosts, "h": list(range(len(hosts)))})
    m_ix = pl.DataFrame({"metric": metrics, "m": list(range(len(metrics)))})
    cells = (rows.join(h_ix, on="host").join(m_ix, on="metric")
             .group_by("m", "h", "t").agg(pl.col("value").mean()))  # duplicate timestamps: their mean
    values = np.full((len(metrics), len(hosts), n_t), np.nan)
    values[cells["m"].to_numpy(), cells["h"].to_numpy(), cells["t"].to_numpy()] = cells["value"].to_numpy()
    values = _nearest_fill(values, int(cfg.max_fill_s // interval))
    with warnings.catch_warnings():  # a metric with no value at all stays NaN
        warnings.simplefilter("ignore", RuntimeWarning)
        lo = np.nanmin(values, axis=(1, 2), keepdims=True)
        hi = np.nanmax(values, axis=(1, 2), keepdims=True)
    span = np.where(hi - lo > 0, hi - lo, 1.0)
    values = (values - lo) / span
    return JobFrame(str(job_id), hosts, metrics, np.datetime64(t0, "us"), interval, values, dropped)


def shared_metrics(sets: list[set]) -> list[str]:
    """The metrics a detector is trained on: those every job carries; when the jobs export different ones
    (DCGM on some, only step times on others), the set carried by the most jobs (ties: the larger set)."""
    sets = [set(s) for s in sets if len(s)]
    if not sets:
        return []
    common = set.intersection(*sets)
    if common:
        return sorted(common)
    return sorted(max({frozenset(s) for s in sets}, key=lambda c: (sum(c <= s for s in sets), len(c))))

