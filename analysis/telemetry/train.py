"""Training the detectors: per-metric LSTM-VAEs and the integrated one on windows of completed jobs,
each method's threshold from the same jobs (robust to a slow machine in any of them), and Minder's
metric priority from labelled windows."""
from __future__ import annotations

import logging
import warnings

import numpy as np
from sklearn.tree import DecisionTreeClassifier

from analysis.telemetry import vae
from analysis.telemetry.detect import DEFAULT_PRIORITY, METHODS, DetectConfig, Models, job_scores
from analysis.telemetry.frames import JobFrame, shared_metrics

progress = logging.getLogger("goodput.progress")  # training takes minutes: `goodput run` shows each model start


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


def train(frames: list[JobFrame], cfg: DetectConfig = DetectConfig(), epochs: int = 30, seed: int = 0,
          labelled: tuple[list[JobFrame], list[np.ndarray]] | None = None, methods=METHODS,
          max_windows: int = vae.MAX_WINDOWS) -> Models:
    """Models from frames of completed jobs (what normal running looks like; one of them may carry a
    machine that ran slow without failing it, and nothing says which), for ``methods`` (the integrated
    VAE is trained only when "int" is among them; each VAE on at most ``max_windows`` windows). Frames
    too short for one window are left out, and those without the metrics trained on (frames.shared_metrics). The machines a threshold leaves out as suspects (Minder's,
    on any metric) are kept in ``Models.suspects``; their jobs' windows are not taken as normal when
    ranking the metrics."""
    frames = [f for f in frames if len(f.starts(cfg.frame))]
    metrics = shared_metrics([set(f.metrics) for f in frames])
    frames = [f for f in frames if set(metrics) <= set(f.metrics)]
    wins = [f.windows(cfg.frame)[0] for f in frames]
    data = [(np.concatenate([w[f.metrics.index(m)].reshape(-1, w.shape[-1]) for f, w in zip(frames, wins)]), 1)
            for m in metrics]
    if "int" in methods:
        data.append((np.concatenate([np.moveaxis(w[[f.metrics.index(m) for m in metrics]], 0, -1)
                                     .reshape(-1, w.shape[-1], len(metrics)) for f, w in zip(frames, wins)]),
                     len(metrics)))
    progress.info("    telemetry detector: training %d models side by side (%d per metric%s, up to %s windows x %d "
                  "epochs)", len(data), len(metrics), " and the integrated one" if "int" in methods else "",
                  f"{max_windows:,}", epochs)
    trained = vae.train_many(data, epochs=epochs, seed=seed, max_windows=max_windows)
    per_metric = dict(zip(metrics, trained))
    integrated = trained[len(metrics)] if "int" in methods else None
    models = Models(metrics, per_metric, integrated, {}, default_priority(metrics), wins[0].shape[-1])
    k = max(1, int(round(cfg.continuity_s / cfg.frame.stride_s)))
    held: dict = {}
    for f, w in zip(frames, wins):
        for method, by_metric in job_scores(models, f, cfg, [m for m in methods if m != "aegis"], w).items():
            for metric, s in by_metric.items():
                held.setdefault((method, metric), []).append(sustained(s, 1 if method == "minder_nc" else k))
    suspects = set()
    for key, per_job in held.items():
        models.thresholds[key], tops = robust_threshold(per_job, cfg.threshold_margin, cfg.threshold_floor)
        if key[0] == "minder":
            suspects |= {(frames[j].job_id, frames[j].hosts[h]) for j, h in tops}
    models.suspects = sorted(suspects)
    if labelled:
        models.priority = rank(labelled, models.suspects, metrics, cfg)
    return models


def rank(labelled: tuple[list[JobFrame], list[np.ndarray]], suspects: list, metrics: list[str],
         cfg: DetectConfig) -> list[str]:
    """The metric priority from labelled windows, leaving out the unlabelled windows of the jobs whose
    machine a threshold left out as a suspect (they may not be normal), and the jobs without the metrics."""
    flagged = {str(job) for job, _ in suspects}
    keep = [i for i, (f, lab) in enumerate(zip(*labelled))
            if (lab.any() or str(f.job_id) not in flagged) and set(metrics) <= set(f.metrics)]
    return priority_from_labels([labelled[0][i] for i in keep], [labelled[1][i] for i in keep], metrics, cfg)


def sustained(scores: np.ndarray, k: int) -> np.ndarray:
    """Per machine, the highest score it held for k consecutive windows (its minimum over them);
    -inf for a machine that never had k windows with data."""
    s = np.nan_to_num(scores, nan=-np.inf)
    if len(s) < k:
        return np.full(s.shape[1], -np.inf)
    return np.min(np.lib.stride_tricks.sliding_window_view(s, k, axis=0), axis=-1).max(axis=0)


def robust_threshold(per_job: list[np.ndarray], margin: float, floor: float) -> tuple[float, list]:
    """The threshold from the training jobs' per-machine sustained scores, robust to a faulty machine
    in any number of them, and the suspects it left out as (job index, machine index).

    Minder looks for one faulty machine per job, so a job's runner-up (its second-highest machine) is
    healthy whatever the job: ``margin`` over the highest runner-up (at least the floor) is the
    threshold machines that cannot be the faulty one would set. A job's top machine is the highest of
    its peers, so a healthy one sits above that by the gap between the two highest; it is a suspect,
    left out, only when it sustained more than ``margin`` times that threshold again. The threshold is
    ``margin`` times the highest score any machine not left out sustained: on clean training jobs
    the old rule (margin over the highest healthy score) unless one stands out that far."""
    order = [np.argsort(-np.where(np.isfinite(v), v, -np.inf)) for v in per_job]
    ranked = [v[o][np.isfinite(v[o])] for v, o in zip(per_job, order)]
    runners = [v[1] for v in ranked if len(v) > 1]
    if not runners:
        return float("-inf"), []  # nothing held k windows: the floor decides
    limit = margin * max(margin * max(runners), floor)
    kept = runners + [v[0] for v in ranked if len(v) and v[0] <= limit]
    out = [(j, int(o[0])) for j, (v, o) in enumerate(zip(ranked, order)) if len(v) and v[0] > limit]
    return float(margin * max(kept)), out
