"""The detector as a versioned artifact (analysis.nodes.cadence): models/minder-<version>.pt (the VAEs' state
dicts) and .json (window, training span, metrics, thresholds, suspects, the fingerprint of its input
definition, and the metrics of each job it was trained on), saved when it is trained and loaded by
the runs in between.

Its metric set is the one training would use: the metrics every job of the training pool (the last
``max_train_jobs`` completed covered jobs) carries. telemetry_jobs.metrics keeps each scored job's
metrics, so a run knows that set from the table and the new jobs it stages anyway, without reading
the pool's telemetry again: the model is retrained when the set a retrain would use is not the one
it was trained with (and the same change never retrains twice)."""
from __future__ import annotations

import hashlib
import json
from dataclasses import asdict
from pathlib import Path

import torch

from analysis.nodes import cadence
from analysis.telemetry import vae
from analysis.telemetry.detect import METHODS, DetectConfig, Models
from analysis.telemetry.frames import shared_metrics

PREFIX = "minder"
ARCH = {"hidden": 4, "latent": 8, "layers": 1, "seed": 0}  # vae.LstmVae's and vae.train's defaults


def definition(cfg: DetectConfig, epochs: int, max_train_jobs: int, min_train_jobs: int,
               lookback_days: float | None, split=None) -> dict:
    """Everything but the data that decides what training gives (lookback_days: the jobs whose labelled
    windows rank the metrics; split: a held-out evaluation's model is never the nightly's)."""
    out = {"format": cadence.FORMAT, "config": asdict(cfg), "epochs": epochs, "max_train_jobs": max_train_jobs,
           "min_train_jobs": min_train_jobs, "lookback_days": lookback_days, "methods": list(METHODS),
           "max_windows": vae.MAX_WINDOWS, **ARCH}
    return out if split is None else {**out, "split": str(split)}


def key(job_id, instance) -> str:
    return f"{job_id}/{instance}"


def save(models: Models, model_dir: Path, meta: dict) -> tuple[str, Path]:
    """minder-<trained_to>-<digest>.pt and .json; the digest is over what was trained, not when, so the
    same data and definition give the same version."""
    state = {"per_metric": {m: v.state_dict() for m, v in models.per_metric.items()},
             "integrated": models.integrated.state_dict() if models.integrated is not None else None}
    # not when nor for which warehouse file (scope): a nightly and a fresh run over the same data agree
    what = {k: v for k, v in meta.items() if k not in ("trained_at", "scope")}
    digest = hashlib.sha256(json.dumps(what, sort_keys=True, default=str).encode()).hexdigest()[:8]
    version = f"{meta['trained_to']:%Y%m%dT%H%M%S}-{digest}"
    model_dir.mkdir(parents=True, exist_ok=True)
    owner = f"-{Path(meta['scope']).stem}" if meta.get("scope") else ""  # two warehouses in a folder keep theirs
    path = model_dir / f"{PREFIX}-{version}{owner}.pt"
    torch.save(state, path)
    path.with_suffix(".json").write_text(json.dumps({
        **meta, "version": version, "metrics": models.metrics,
        "priority": models.priority, "window": models.window,
        "thresholds": {f"{k[0]}:{k[1]}": v for k, v in models.thresholds.items()},
        "suspects": [f"{j}:{h}" for j, h in models.suspects]}, indent=2, default=str) + "\n")
    return version, path


def load(meta: dict, json_path: Path) -> Models:
    """The saved models, as training returned them (state dicts round-trip exactly: the same scores)."""
    state = torch.load(json_path.with_suffix(".pt"), weights_only=True)
    per_metric = {}
    for metric, weights in state["per_metric"].items():
        per_metric[metric] = vae.LstmVae()
        per_metric[metric].load_state_dict(weights)
        per_metric[metric].eval()
    integrated = None
    if state["integrated"] is not None:
        integrated = vae.LstmVae(n_inputs=len(meta["metrics"]))
        integrated.load_state_dict(state["integrated"])
        integrated.eval()
    thresholds = {tuple(k.split(":", 1)): float(v) for k, v in meta["thresholds"].items()}
    return Models(list(meta["metrics"]), per_metric, integrated, thresholds, list(meta["priority"]),
                  int(meta.get("window", 0)), load_suspects(meta))


def load_suspects(meta: dict) -> list[tuple[str, str]]:
    return [tuple(s.split(":", 1)) for s in meta["suspects"]]


def ranked(json_path: Path, priority: list[str]) -> None:
    """The metric priority ranked after training (run.rank_metrics) into the model's JSON, marked ranked.
    The version does not change: it names what was trained, and the order follows from it and the data."""
    meta = json.loads(json_path.read_text())
    tmp = json_path.with_suffix(".json.tmp")
    tmp.write_text(json.dumps({**meta, "priority": priority, "ranked": True}, indent=2, default=str) + "\n")
    tmp.replace(json_path)


def metric_set(per_job: dict, keys: list[str]) -> list[str] | None:
    """The metrics the detector trains on over the jobs of ``keys`` (frames.shared_metrics; a job without usable telemetry, an empty list, is left
    out as training leaves it out); None when a job's metrics are not known."""
    if any(per_job.get(k) is None for k in keys):
        return None
    return shared_metrics([set(per_job[k]) for k in keys])


def metric_change(meta: dict, keys: list[str], per_job: dict) -> str | None:
    """Why the metric set changed since the saved model was trained, or None: the metrics every job of
    the training pool now (``keys``) carries, against the same set taken when it was trained."""
    now, then = metric_set(per_job, keys), meta.get("metric_set")
    if now is None:
        return "the metrics of a job in the training pool are not known"
    if then is None or now == sorted(then):
        return None if then is not None else "saved model has no metric set"
    added, gone = sorted(set(now) - set(then)), sorted(set(then) - set(now))
    return "metric set changed" + (f": +{','.join(added)}" if added else ":") + (f" -{','.join(gone)}" if gone else "")
