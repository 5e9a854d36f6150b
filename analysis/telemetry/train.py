"""Training the detectors: per-metric LSTM-VAEs and the integrated one on windows of healthy jobs,
each method's threshold from the same jobs, and Minder's metric priority from labelled windows."""
from __future__ import annotations

import warnings

import numpy as np
from sklearn.tree import DecisionTreeClassifier

from analysis.telemetry import vae
from analysis.telemetry.detect import DEFAULT_PRIORITY, METHODS, DetectConfig, Models, job_scores
from analysis.telemetry.frames import JobFrame


def default_priority(metrics: list[str]) -> list[str]:
    """Metrics in the paper's order of sensitivity (by name), the rest after them."""
    def rank(m: str) -> int:
        low = m.lower()
        return next((i for i, key in enumerate(DEFAULT_PRIORITY) if key in low), len(DEFAULT_PRIORITY))
    return sorted(metrics, key=lambda m: (rank(m), m))


def max_z(frame: JobFrame, cfg: DetectConfig) -> np.ndarray:
    """(n_windows, n_metrics): per window and metric, the largest |z| of any machine at any sample
    (z across the machines at each sampling point: Minder §4.3 step 1)."""
    x = frame.values
    with warnings.catch_warnings(), np.errstate(invalid="ignore", divide="ignore"):
        warnings.simplefilter("ignore", RuntimeWarning)  # a sampling point without data: z is 0 there
        z = np.abs(x - np.nanmean(x, axis=1, keepdims=True)) / np.nanstd(x, axis=1, keepdims=True)
    z = np.nan_to_num(z, nan=0.0, posinf=0.0)
    windows, _ = JobFrame(frame.job_id, frame.hosts, frame.metrics, frame.t0, frame.interval_s, z).windows(cfg.frame)
    return windows.max(axis=(1, 3)).T


def priority_from_labels(frames: list[JobFrame], labels: list[np.ndarray], metrics: list[str],
                         cfg: DetectConfig) -> list[str]:
    """A decision tree over per-window max |z| per metric, trained on windows labelled abnormal when a
    faulty machine was in them; metrics nearer the root (more important) are checked first."""
    x = np.concatenate([max_z(f, cfg)[:, [f.metrics.index(m) for m in metrics]] for f in frames])
    y = np.concatenate(labels)
    if len(np.unique(y)) < 2:
        return default_priority(metrics)
    tree = DecisionTreeClassifier(max_depth=4, random_state=0).fit(x, y)
    order = np.argsort(-tree.feature_importances_, kind="stable")
    ranked = [metrics[i] for i in order if tree.feature_importances_[i] > 0]
    return ranked + [m for m in default_priority(metrics) if m not in ranked]


def train(healthy: list[JobFrame], cfg: DetectConfig = DetectConfig(), epochs: int = 30, seed: int = 0,
          labelled: tuple[list[JobFrame], list[np.ndarray]] | None = None, methods=METHODS) -> Models:
    """Models from frames of jobs without a fault (their windows are what normal looks like), for
    ``methods`` (the integrated VAE is trained only when "int" is among them). Frames too short for
    one window are left out."""
    healthy = [f for f in healthy if len(f.starts(cfg.frame))]
    metrics = sorted(set.intersection(*(set(f.metrics) for f in healthy)))
    wins = [f.windows(cfg.frame)[0] for f in healthy]
    per_metric = {}
    for m in metrics:
        x = np.concatenate([w[f.metrics.index(m)].reshape(-1, w.shape[-1]) for f, w in zip(healthy, wins)])
        per_metric[m] = vae.train(x, epochs=epochs, seed=seed)
    stacked = np.concatenate([np.moveaxis(w[[f.metrics.index(m) for m in metrics]], 0, -1)
                              .reshape(-1, w.shape[-1], len(metrics)) for f, w in zip(healthy, wins)])
    integrated = vae.train(stacked, n_inputs=len(metrics), epochs=epochs, seed=seed) if "int" in methods else None
    priority = priority_from_labels(*labelled, metrics, cfg) if labelled else default_priority(metrics)
    models = Models(metrics, per_metric, integrated, {}, priority, wins[0].shape[-1])
    k = max(1, int(round(cfg.continuity_s / cfg.frame.stride_s)))
    sustained: dict = {}
    for f, w in zip(healthy, wins):
        for method, by_metric in job_scores(models, f, cfg, [m for m in methods if m != "aegis"], w).items():
            for metric, s in by_metric.items():
                sustained.setdefault((method, metric), []).append(sustained_max(s, 1 if method == "minder_nc" else k))
    # the lowest threshold under which no healthy training job would have confirmed an alert
    models.thresholds = {key: float(np.nanmax(v)) * cfg.threshold_margin for key, v in sustained.items()}
    return models


def sustained_max(scores: np.ndarray, k: int) -> float:
    """The highest score any one machine holds for k consecutive windows (its minimum over them)."""
    s = np.nan_to_num(scores, nan=-np.inf)
    if len(s) < k:
        return float("-inf")
    held = np.min(np.lib.stride_tricks.sliding_window_view(s, k, axis=0), axis=-1)
    return float(held.max())
