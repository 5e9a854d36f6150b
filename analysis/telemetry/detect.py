"""Scores, candidates, continuity and alerts, for Minder and the methods it is compared with.

Per window, each method gives every machine a score; the top machine is the
window's candidate when its score passes the method's threshold (learned on
completed jobs: train.robust_threshold); a machine is confirmed when it stays
the candidate for ``continuity`` consecutive windows (Minder: 4 minutes). Methods:
  minder     per metric, the LSTM-VAE embedding of each machine's window; the
             sum of its Euclidean distances to every other machine, as a robust
             z-score across the machines (median and MAD: the "normal score");
  minder_nc  the same without continuity (one window confirms);
  raw        the same distances on the normalised windows themselves (no VAE);
  con        one distance over all metrics' embeddings concatenated;
  int        one integrated LSTM-VAE over all metrics at once;
  md         Mahalanobis distance of each machine's window means (all metrics)
             from the central 80% of the job's machines, as a robust z-score;
  aegis      Aegis' rule: a machine outside its peers' mean +- 2 sigma on a
             metric for 10 minutes without a break (no model, no threshold).
A machine without data in a window is left out of that window and reported as
missing data (method ``missing_data``), never scored as healthy.
"""
from __future__ import annotations

import warnings
from dataclasses import dataclass, field

import numpy as np
from scipy.spatial.distance import cdist

from analysis.telemetry import vae
from analysis.telemetry.frames import JobFrame
from analysis.settings import DetectConfig

METHODS = ("minder", "minder_nc", "raw", "con", "int", "md", "aegis")
# Metric families in the order Minder checks them when no labelled history ranks them
# (the paper's decision tree, Fig. 7: PFC, CPU, GPU, NVLink first).
DEFAULT_PRIORITY = ("pause", "pfc", "cpu", "gpu_util", "clock", "nvlink", "pcie", "infiniband", "ecn")


def _quiet(fn):
    """Windows without data give all-NaN slices: NaN is the answer there, not a warning."""
    def wrapped(*args, **kwargs):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            return fn(*args, **kwargs)
    wrapped.__doc__ = fn.__doc__
    return wrapped


@_quiet
def robust_z(s: np.ndarray) -> np.ndarray:
    """Per row (window), each machine's sum of distances as a robust z-score across machines."""
    med = np.nanmedian(s, axis=-1, keepdims=True)
    mad = 1.4826 * np.nanmedian(np.abs(s - med), axis=-1, keepdims=True)
    return (s - med) / (mad + 0.05 * np.abs(med) + 1e-9)


def distance_scores(emb: np.ndarray) -> np.ndarray:
    """emb (n_hosts, n_windows, d) -> (n_windows, n_hosts) scores; NaN for machines without data."""
    n_h, n_w, _ = emb.shape
    out = np.full((n_w, n_h), np.nan)
    for w in range(n_w):
        x = emb[:, w, :]
        ok = np.isfinite(x).all(axis=1)
        if ok.sum() < 3:
            continue
        out[w, ok] = cdist(x[ok], x[ok]).sum(axis=1)
    return robust_z(out)


@_quiet
def md_scores(windows: np.ndarray) -> np.ndarray:
    """windows (n_metrics, n_hosts, n_windows, W) -> (n_windows, n_hosts) Mahalanobis robust z-scores."""
    means = np.nanmean(windows, axis=3).transpose(2, 1, 0)  # (n_w, n_h, n_m)
    out = np.full(means.shape[:2], np.nan)
    for w, x in enumerate(means):
        ok = np.isfinite(x).all(axis=1)
        if ok.sum() < x.shape[1] + 2:
            continue
        xo = x[ok]
        # a distance from a fit that includes the outlier is bounded ((n-1)/sqrt(n)): fit on the
        # central 80% of the machines (by a first pass), then measure everyone against that
        core = xo
        for _ in range(2):
            centre, cov = core.mean(axis=0), np.cov(core, rowvar=False) + 1e-6 * np.eye(x.shape[1])
            d = xo - centre
            md = np.sqrt(np.maximum(np.einsum("ij,jk,ik->i", d, np.linalg.pinv(cov), d), 0))
            core = xo[md <= np.quantile(md, 0.8)]
        out[w, ok] = md
    return robust_z(out)


@_quiet
def aegis_flags(frame: JobFrame, cfg: DetectConfig) -> list[tuple[int, int, int, int]]:
    """(host, metric, first sample, confirming sample) for each machine outside mean +- k sigma of its
    peers on a metric for aegis_s seconds without a break."""
    x = frame.values  # (n_m, n_h, n_t)
    mu, sd = np.nanmean(x, axis=1, keepdims=True), np.nanstd(x, axis=1, keepdims=True)
    out = np.abs(x - mu) > cfg.aegis_sigma * np.where(sd > 0, sd, np.inf)
    need = max(1, int(round(cfg.aegis_s / frame.interval_s)))
    # the length of the run of flags ending at each sample: flags so far less those before its last break
    count = np.cumsum(out, axis=-1)
    run = count - np.maximum.accumulate(np.where(out, 0, count), axis=-1)
    reached = run >= need
    first = reached.argmax(axis=-1)  # the first sample a run reaches ``need`` (where any does)
    return [(int(h), int(m), int(first[m, h]) - need + 1, int(first[m, h])) for m, h in np.argwhere(reached.any(axis=-1))]


@dataclass
class Models:
    """What detection needs: per-metric VAEs, the integrated one, thresholds and the metric order."""
    metrics: list[str]
    per_metric: dict  # metric -> LstmVae
    integrated: object | None
    thresholds: dict  # (method, metric or "*") -> score
    priority: list[str]
    window: int = 0
    suspects: list = field(default_factory=list)  # (job_id, host) training machines a threshold left out


def _scores(method: str, models: Models, frame: JobFrame, windows: np.ndarray,
            done: dict | None = None) -> dict[str, np.ndarray]:
    """metric (or "*") -> (n_windows, n_hosts) scores for one method. ``done`` keeps, for the other methods of
    the same job, the per-metric embeddings and Minder's scores (minder_nc's and con's start from them)."""
    done = {} if done is None else done
    idx = [frame.metrics.index(m) for m in models.metrics if m in frame.metrics]
    names = [frame.metrics[i] for i in idx]
    if not idx:  # a job exporting none of the metrics the detector was trained on
        return {}

    def embedded(m: str, i: int) -> np.ndarray:
        if ("emb", m) not in done:
            done[("emb", m)] = vae.embed(models.per_metric[m], windows[i])
        return done[("emb", m)]
    if method in ("minder", "minder_nc"):  # the same scores: they differ in continuity only (detect)
        if "minder" not in done:
            done["minder"] = {m: distance_scores(embedded(m, i)) for m, i in zip(names, idx)}
        return done["minder"]
    if method == "raw":
        return {m: distance_scores(windows[i]) for m, i in zip(names, idx)}
    if method == "con":
        return {"*": distance_scores(np.concatenate([embedded(m, i) for m, i in zip(names, idx)], axis=-1))}
    if method == "int":
        if len(idx) != len(models.metrics):  # the integrated VAE reads every metric it was trained on at once
            return {}
        stacked = np.moveaxis(windows[idx], 0, -1)  # (n_h, n_w, W, n_m)
        return {"*": distance_scores(vae.embed(models.integrated, stacked, n_inputs=len(idx), stacked=True))}
    if method == "md":
        return {"*": md_scores(windows[idx])}
    raise ValueError(f"unknown method {method!r}")


def job_scores(models: Models, frame: JobFrame, cfg: DetectConfig, methods=METHODS,
               windows: np.ndarray | None = None) -> dict:
    """method -> metric -> (n_windows, n_hosts) scores, for the score-based methods (``windows``:
    the frame's, when the caller has cut them already)."""
    windows = frame.windows(cfg.frame)[0] if windows is None else windows
    done: dict = {}
    return {m: _scores(m, models, frame, windows, done) for m in methods if m != "aegis"}


def confirm(scores: np.ndarray, threshold: float, k: int) -> tuple[int, int, float] | None:
    """The first machine that is the window's candidate for k consecutive windows:
    (host, confirming window, its score), or None."""
    run_host, run = -1, 0
    for w, row in enumerate(scores):
        if not np.isfinite(row).any():
            run_host, run = -1, 0
            continue
        h = int(np.nanargmax(row))
        if row[h] > threshold:
            run = run + 1 if h == run_host else 1
            run_host = h
            if run >= k:
                return h, w, float(row[h])
        else:
            run_host, run = -1, 0
    return None


def detect(models: Models, frame: JobFrame, cfg: DetectConfig = DetectConfig(), methods=METHODS) -> list[dict]:
    """Alerts for one job: per method, every (machine, metric) confirmed, plus missing data."""
    windows, starts = frame.windows(cfg.frame)
    w_len = windows.shape[-1]
    k = max(1, int(round(cfg.continuity_s / cfg.frame.stride_s)))
    scores = job_scores(models, frame, cfg, methods, windows)
    alerts = []
    for method in methods:
        if method == "aegis":
            for h, m, t_first, t_conf in aegis_flags(frame, cfg):
                alerts.append(_alert(frame, models, method, h, frame.metrics[m], t_first, t_conf + 1, None))
            continue
        kk = 1 if method == "minder_nc" else k
        for metric, s in scores[method].items():
            thr = models.thresholds.get((method, metric), cfg.threshold_floor)
            hit = confirm(s, max(thr, cfg.threshold_floor), kk)
            if hit:
                h, w, score = hit
                alerts.append(_alert(frame, models, method, h, metric, int(starts[w - kk + 1]),
                                     int(starts[w] + w_len), score))
    have = np.isfinite(windows).all(axis=3)  # (n_m, n_h, n_w)
    # a machine is missing data where most of its peers have theirs; when nobody has, the telemetry
    # just does not cover that stretch of the job
    missing = ~have & (have.mean(axis=1, keepdims=True) >= 0.5)
    for h in np.flatnonzero(missing.any(axis=(0, 2))):
        w0 = int(np.flatnonzero(missing[:, h, :].any(axis=0))[0])
        gone = [frame.metrics[m] for m in np.flatnonzero(missing[:, h, :].any(axis=1))]
        alerts.append(_alert(frame, models, "missing_data", int(h), ",".join(gone), int(starts[w0]),
                             int(starts[w0] + w_len), float(missing[:, h, :].mean())))
    return sorted(alerts, key=lambda a: (a["method"], a["confirmed_at"], a["metric_rank"]))


def _rank(models: Models, metric: str) -> int:
    return models.priority.index(metric) if metric in models.priority else len(models.priority)


def _alert(frame: JobFrame, models: Models, method: str, h: int, metric: str, first: int, confirmed: int,
           score) -> dict:
    return {"job_id": frame.job_id, "host": frame.hosts[h], "metric": metric, "method": method,
            "window_start": frame.time_of(first).astype("datetime64[us]").item(),
            "confirmed_at": frame.time_of(confirmed).astype("datetime64[us]").item(), "score": score,
            "metric_rank": _rank(models, metric)}


