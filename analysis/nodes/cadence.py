"""Models on a cadence (issue 22). A trained model is a versioned artifact in models/ beside the
warehouse: the model file and a JSON of what it was trained on (training window, the fingerprint of
its input definition, the data's end when it was trained, the wall-clock time). A run loads the
newest artifact of its kind and only scores with it, unless the model must be retrained:

- on demand (`goodput models --retrain KIND`, Cadence.retrain);
- no saved model, or one from before fingerprints were stored;
- its input definition changed: the fingerprint of its hyper-parameters and feature set (and, for
  the telemetry detector, the metric set it would be trained on: analysis.telemetry.saved) differs;
- it is too old: the data moved on ``retrain_after_days`` or more since it was trained. Age is data
  time (the data's end now minus its end at training), not the clock: a nightly run sees the same
  age as the clock would, and a replay of history retrains where the nightlies would have;
- it was trained on data after the day asked for (``--as-of`` before its training): never score
  with a model that saw the future.

Pure: no Dagster; the assets and the CLI pass the settings in.
"""
from __future__ import annotations

import hashlib
import json
import pickle
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path

import polars as pl
from analysis.settings import Cadence

FORMAT = 1  # bump when an artifact's layout, or code that changes what a model computes, changes
KINDS = ("telemetry", "incident", "lemon")


@dataclass
class ModelState:
    """Whether a run trained its model or loaded the saved one, and why."""
    kind: str
    trained: bool
    reason: str
    version: str | None = None
    age_days: float | None = None  # of the model scored with, in data time (0 when trained this run)
    path: Path | None = None
    trained_at: str | None = None
    cpu_s: dict = field(default_factory=dict)  # "train" / "score": CPU seconds of this run

    def metadata(self, prefix: str) -> dict:
        """For a Dagster MaterializeResult: trained or loaded, the model's age, why, its version."""
        out = {f"{prefix}_model": "trained" if self.trained else "loaded", f"{prefix}_model_reason": self.reason,
               f"{prefix}_model_version": self.version or "", f"{prefix}_model_trained_at": self.trained_at or ""}
        if self.age_days is not None:
            out[f"{prefix}_model_age_days"] = round(self.age_days, 2)
        out.update({f"{prefix}_{k}_cpu_s": round(v, 2) for k, v in self.cpu_s.items()})
        return out


def fingerprint(definition: dict) -> str:
    """A short hash of a model's input definition (hyper-parameters, feature set, metric set)."""
    return hashlib.sha256(json.dumps(definition, sort_keys=True, default=str).encode()).hexdigest()[:16]


def now() -> str:
    return datetime.now(timezone.utc).replace(tzinfo=None).isoformat(timespec="seconds")


def latest(model_dir: Path | None, prefix: str, scope: str | None = None) -> tuple[dict, Path] | None:
    """The newest saved artifact ``<prefix>-*.json`` (by its trained_at, else the file's time) of this
    warehouse (``scope``), and the JSON's path; None without one."""
    if model_dir is None or not Path(model_dir).is_dir():
        return None
    found = []
    for path in Path(model_dir).glob(f"{prefix}-*.json"):
        try:
            meta = json.loads(path.read_text())
        except (OSError, ValueError):
            continue  # a half-written or foreign file is no model
        if scope is not None and meta.get("scope") not in (None, scope):
            continue
        found.append((meta.get("trained_at") or datetime.fromtimestamp(path.stat().st_mtime).isoformat(), path, meta))
    if not found:
        return None
    _, path, meta = max(found, key=lambda f: (f[0], f[1].name))
    return meta, path


def decide(kind: str, saved: tuple[dict, Path] | None, fp: str, data_to: datetime, cadence: Cadence,
           model_dir: Path | None) -> ModelState:
    """Train (trained=True, with the reason) or load the saved model (trained=False)."""
    if model_dir is None:
        return ModelState(kind, True, "no model folder: trained for this run only")
    if cadence.forced(kind):
        return ModelState(kind, True, "retrain asked for")
    if saved is None:
        return ModelState(kind, True, "no saved model")
    meta, path = saved
    if "fingerprint" not in meta or "data_to" not in meta:
        return ModelState(kind, True, f"saved model {path.name} predates fingerprints")
    if meta["fingerprint"] != fp:
        return ModelState(kind, True, "input definition changed (hyper-parameters or features)")
    age = (data_to - datetime.fromisoformat(meta["data_to"])).total_seconds() / 86400
    if age < 0:
        return ModelState(kind, True, f"saved model was trained on data up to {meta['data_to']}, after this run's end")
    if age >= cadence.retrain_after_days:
        return ModelState(kind, True, f"saved model is {age:.1f} days old (retrain_after_days "
                                      f"{cadence.retrain_after_days:g})")
    return ModelState(kind, False, f"saved model is {age:.1f} days old", meta.get("version"), age, path,
                      meta.get("trained_at"))


def load_saved(kind: str, state: ModelState, saved: tuple[dict, Path] | None) -> tuple[object | None, ModelState]:
    """The pickled model ``decide`` chose to load, or, when it no longer loads (its classes moved or changed
    with goodput's code: a new version reading an older models/ folder), nothing and a decision to retrain."""
    if state.trained or saved is None:
        return None, state
    path = saved[1].with_suffix(".pkl")
    try:
        return pickle.loads(path.read_bytes()), state
    except (OSError, pickle.UnpicklingError, ImportError, AttributeError, EOFError, TypeError) as exc:
        return None, ModelState(kind, True, f"saved model {path.name} no longer loads ({type(exc).__name__}: "
                                            f"{str(exc).splitlines()[0] if str(exc) else ''})")


def common_meta(kind: str, fp: str, definition: dict, data_to: datetime, cadence: Cadence) -> dict:
    """What every artifact's JSON carries beside its own training window."""
    return {"kind": kind, "format": FORMAT, "fingerprint": fp, "definition": definition,
            "data_to": data_to.isoformat(), "scope": cadence.scope}


def trained(kind: str, reason: str, version: str, path: Path | None, meta: dict) -> ModelState:
    return ModelState(kind, True, reason, version, 0.0, path, meta.get("trained_at"))


def save_evaluation(model_path: Path | None, evaluation: pl.DataFrame) -> None:
    """A model's held-out evaluation beside it (<model>.evaluation.parquet): a new warehouse that reuses
    the saved model (a demo run again, a rebuilt warehouse) gets the figures it was judged by."""
    if model_path is not None and evaluation.height:
        evaluation.write_parquet(Path(model_path).with_suffix(".evaluation.parquet"))


def saved_evaluation(model_path: Path) -> pl.DataFrame | None:
    path = Path(model_path).with_suffix(".evaluation.parquet")
    return pl.read_parquet(path) if path.exists() else None
