"""Incident probability per node (Anubis §3.3): status samples from incident
history, a time-based split with no leakage, Cox-Time against the three
exponential baselines, and node_risk for the end of the data. The fitted
models are saved beside the warehouse and retrained on a cadence
(analysis.nodes.cadence); the runs in between only score the nodes' current status."""
from __future__ import annotations

import hashlib
import json
import pickle
import time
from dataclasses import asdict, dataclass
from datetime import datetime, timezone
from pathlib import Path

import duckdb
import numpy as np
import polars as pl

from analysis import sql
from analysis.nodes import asof
from analysis.nodes import cadence
from analysis.nodes import survival
from analysis.nodes import survival_eval
from analysis.nodes.cadence import Cadence, ModelState
from analysis.nodes.survival import progress

PREFIX = "incident"  # models/incident-<as_of>-<version>.pkl
HORIZONS_DAYS = (1, 7, 30)
RISK_SCHEMA = {"host": pl.Utf8, "as_of": pl.Datetime("us"), "horizon_days": pl.Int32, "p_incident": pl.Float64,
               "expected_days_to_incident": pl.Float64, "model": pl.Utf8}


@dataclass(frozen=True)
class IncidentConfig:
    every_days: int = 7  # a status sample per node per week, plus one after each incident
    test_share: float = 0.3  # the last 30% of the history is the held-out test span
    max_eval_samples: int = 3000  # pycox's survival curves are slow; the test set is sampled (seeded)


def build_samples(con: duckdb.DuckDBPyConnection, end: datetime, every_days: int = 7,
                  only_end: bool = False) -> pl.DataFrame:
    """incident_samples as of ``end``: every status sample of the history, or with ``only_end`` only each node's
    status at ``end`` (what saved models score)."""
    sql.run_steps(con, [("models/view_node_population", None), *asof.steps(con, end),
                        ("models/build_incident_samples", {"end": end, "every_days": every_days,
                                                           "only_end": only_end})])
    return con.sql("SELECT * FROM incident_samples ORDER BY t, host").pl()  # fixed order: seeded subsets repeat


def censor_at(samples: pl.DataFrame, at: datetime) -> pl.DataFrame:
    """Samples taken before ``at`` as they looked at ``at``: an incident after
    it is not known yet, so the sample is censored there."""
    before = samples.filter(pl.col("t") < at)
    left = (pl.lit(at) - pl.col("t")).dt.total_seconds() / 3600.0
    return before.with_columns(event=pl.col("event") & (pl.col("duration_h") <= left),
                               duration_h=pl.min_horizontal(pl.col("duration_h"), left))


def anubis_accuracy(pred_h: np.ndarray, actual_h: np.ndarray, cap_h: float) -> float:
    """Mean of 1 - |pred - actual| / actual over samples whose incident was seen,
    predictions capped at the trace length; a sample's accuracy is floored at 0."""
    pred = np.minimum(pred_h, cap_h)
    return float(np.mean(np.clip(1 - np.abs(pred - actual_h) / np.maximum(actual_h, 1e-6), 0, 1)))


def _metrics(surv: np.ndarray, grid: np.ndarray, test: pl.DataFrame, cap_h: float) -> dict[str, float]:
    durations, events = test["duration_h"].to_numpy(), test["event"].to_numpy().astype(int)
    seen = events == 1
    brier_grid = grid[(grid > 0) & (grid < durations.max())]
    # Antolini's concordance with tied predictions counted half (pycox's
    # adj_antolini, Harrell's convention): nodes in the same status get the same
    # curve, and counting those ties as discordant would punish every model that
    # groups nodes, down to 0 for one that predicts the same curve for all. NaN when
    # the held-out samples hold no comparable pair (a small cluster's few weeks): the
    # evaluation table then says the metric is undefined. pycox's numbers, in numpy
    # (survival_eval: pycox's numba compile was ~3 s of every run that trains).
    return {"anubis_accuracy": anubis_accuracy(survival.expected_hours(surv, grid)[seen], durations[seen], cap_h),
            "concordance_td": survival_eval.concordance_td(surv, grid, durations, events),
            "integrated_brier_score": survival_eval.integrated_brier_score(surv, grid, durations, events, brier_grid)
            if len(brier_grid) > 1 else float("nan")}


def evaluate(samples: pl.DataFrame, start: datetime, end: datetime, cfg: IncidentConfig = IncidentConfig(),
             models: list | None = None) -> pl.DataFrame:
    """Train every model on samples before the split (censored at the split),
    judge them on samples taken after it. Returns model, metric, value, split, n."""
    split = start + (end - start) * (1 - cfg.test_share)
    train = censor_at(samples, split).filter(pl.col("duration_h") > 0)
    test = samples.filter((pl.col("t") >= split) & (pl.col("t") < end) & (pl.col("duration_h") > 0))
    if test.height > cfg.max_eval_samples:
        test = test.sample(cfg.max_eval_samples, seed=survival.SEED)
    cap_h = (end - split).total_seconds() / 3600.0
    grid = np.linspace(0, cap_h, 241)
    rows = []
    if train["event"].sum() == 0 or test["event"].sum() == 0:
        return _frame(rows)
    for model in models or survival.all_models():
        try:
            model.fit(train)
        except survival.NotEnoughData:
            continue
        for metric, value in _metrics(model.survival(test, grid), grid, test, cap_h).items():
            rows.append((model.name, metric, value, f"train<{split:%Y-%m-%d}<=test", test.height))
    return _frame(rows)


def _frame(rows: list) -> pl.DataFrame:
    return pl.DataFrame(rows, orient="row", schema={"model": pl.Utf8, "metric": pl.Utf8, "value": pl.Float64,
                                                    "split": pl.Utf8, "n": pl.Int64})


def fit_risk_models(samples: pl.DataFrame, end: datetime, models: list | None = None) -> list:
    """Every model fitted on the samples before ``end`` (a model with too little history is left out)."""
    train = samples.filter((pl.col("t") < end) & (pl.col("duration_h") > 0))
    fitted = []
    for model in (models or survival.all_models()) if train.height else []:
        try:
            fitted.append(model.fit(train))
        except survival.NotEnoughData:
            continue
    return fitted


def score_risk(fitted: list, samples: pl.DataFrame, start: datetime, end: datetime) -> pl.DataFrame:
    """Each host's status at ``end`` scored by the fitted models: P(incident within 1, 7, 30 days) and
    the expected days to the next one, restricted to the length of the history (no model knows beyond it)."""
    current = samples.filter(pl.col("t") == end)
    horizons = np.array([d * 24.0 for d in HORIZONS_DAYS])
    grid = np.linspace(0, max((end - start).total_seconds() / 3600.0, 24.0), 721)
    frames = []
    for model in fitted if current.height else []:
        # one call for both: Cox-Time evaluates its networks at every baseline time whatever the grid (half the
        # node models' scoring time); each model's curve is pointwise in the grid, so the values are the same
        both = model.survival(current, np.concatenate([horizons, grid]))
        surv_h, expected = both[:len(horizons)], survival.expected_hours(both[len(horizons):], grid) / 24.0
        for i, days in enumerate(HORIZONS_DAYS):
            frames.append(current.select("host").with_columns(
                as_of=pl.lit(end), horizon_days=pl.lit(days, pl.Int32), p_incident=pl.Series(1 - surv_h[i]),
                expected_days_to_incident=pl.Series(expected), model=pl.lit(model.name)))
    return pl.concat(frames) if frames else pl.DataFrame(schema=RISK_SCHEMA)


def node_risk(samples: pl.DataFrame, start: datetime, end: datetime, models: list | None = None) -> pl.DataFrame:
    """Fit on every sample before ``end``; score each host's status at ``end``."""
    return score_risk(fit_risk_models(samples, end, models), samples, start, end)


def definition(cfg: IncidentConfig) -> dict:
    """What decides the fitted models besides the data (analysis.nodes.cadence)."""
    hyper = ("epochs", "hidden", "seeds", "max_rows", "baseline_sample", "min_rows", "min_events", "top")
    return {"format": cadence.FORMAT, "config": asdict(cfg), "covariates": list(survival.COVARIATES),
            "seed": survival.SEED,
            "models": {m.name: {k: getattr(m, k) for k in hyper if hasattr(m, k)} for m in survival.all_models()}}


def run(con: duckdb.DuckDBPyConnection, as_of: datetime, start: datetime, cfg: IncidentConfig = IncidentConfig(),
        model_dir: Path | None = None, cad: Cadence = Cadence()) -> tuple[pl.DataFrame, pl.DataFrame, ModelState]:
    """incident_samples (every sample when the models are trained, else the status at ``as_of`` only) and
    node_risk for ``as_of``, with the models saved in ``model_dir`` unless
    analysis.nodes.cadence says to retrain them; the incident rows of model_evaluation (the time split) are
    rebuilt only when they are, else restored from beside the saved models (analysis.nodes.cadence.save_evaluation)."""
    fp = cadence.fingerprint(definition(cfg))
    last = cadence.latest(model_dir, PREFIX, cad.scope)
    state = cadence.decide("incident", last, fp, as_of, cad, model_dir)
    fitted, state = cadence.load_saved("incident", state, last)
    # the history's samples only to train on: scoring saved models reads each node's status at as_of
    samples = build_samples(con, as_of, cfg.every_days, only_end=not state.trained)
    t0 = time.process_time()
    steps = [("schema/node_risk", None), ("models/store_node_risk", {"as_of": as_of})]
    evaluation = _frame([])
    if state.trained:
        trained_at = datetime.now(timezone.utc).replace(tzinfo=None)
        progress.info("    incident model: %s status samples; evaluating on the later %.0f%% of the history ...",
                      f"{samples.height:,}", cfg.test_share * 100)
        evaluation = evaluate(samples, start, as_of, cfg).with_columns(
            trained_at=pl.lit(trained_at), as_of=pl.lit(as_of), family=pl.lit("incident"))
        progress.info("    incident model: training on the whole history ...")
        fitted = fit_risk_models(samples, as_of)
        meta = {**cadence.common_meta("incident", fp, definition(cfg), as_of, cad), "as_of": as_of.isoformat(),
                "trained_from": start.isoformat(), "trained_to": as_of.isoformat(), "n_samples": samples.height,
                "n_incidents": int(samples["event"].sum()), "models": [m.name for m in fitted],
                "trained_at": trained_at.isoformat(timespec="seconds")}
        version, path = _save(fitted, model_dir, meta) if model_dir else (None, None)
        state = cadence.trained("incident", state.reason, version, path, meta)
        state.cpu_s["train"] = time.process_time() - t0
        cadence.save_evaluation(path, evaluation)
        steps += [("schema/model_evaluation", None), ("models/store_model_evaluation", {"as_of": as_of, "family": "incident"})]
        t0 = time.process_time()
    else:
        saved = _evaluation_to_restore(con, last[1].with_suffix(".pkl"))
        if saved is not None:
            evaluation = saved
            steps += [("schema/model_evaluation", None),
                      ("models/store_model_evaluation", {"as_of": saved["as_of"][0], "family": "incident"})]
    risk = score_risk(fitted, samples, start, as_of)
    sql.run_staged(con, {"staged_node_risk": risk, "staged_model_evaluation": evaluation}, steps)
    state.cpu_s["score"] = time.process_time() - t0
    return risk, evaluation, state


def _evaluation_to_restore(con: duckdb.DuckDBPyConnection, model_path: Path) -> pl.DataFrame | None:
    """The saved models' evaluation when this warehouse lacks it (a new warehouse reusing them), else None."""
    saved = cadence.saved_evaluation(model_path)
    if saved is None or not saved.height:
        return None
    if sql.table_exists(con, "model_evaluation") and sql.query(
            con, "models/model_evaluation_at", {"family": "incident", "as_of": saved["as_of"][0]}).height:
        return None
    return saved


def _save(fitted: list, model_dir: Path, meta: dict) -> tuple[str, Path]:
    """models/incident-<as_of>-<version>.pkl (the fitted models, without their training state:
    survival.CoxTime.__getstate__) and the .json beside it."""
    what = {k: v for k, v in meta.items() if k != "trained_at"}
    version = hashlib.sha256(json.dumps(what, sort_keys=True).encode()).hexdigest()[:12]
    model_dir.mkdir(parents=True, exist_ok=True)
    path = model_dir / f"{PREFIX}-{meta['as_of'][:10].replace('-', '')}-{version}.pkl"
    path.write_bytes(pickle.dumps(fitted))
    path.with_suffix(".json").write_text(json.dumps({**meta, "version": version}, indent=2) + "\n")
    return version, path


def first_day(con: duckdb.DuckDBPyConnection) -> datetime | None:
    start = con.execute(sql.load("models/model_data_span")).fetchall()[0][0]
    return datetime(start.year, start.month, start.day) if start else None
