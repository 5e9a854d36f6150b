"""Score every node for lemon-ness as of a day: features over weekly snapshots,
Meta's thresholds always, the classifier when labels allow, an evaluation on
a time split, and the model saved with its training window, retrained on a
cadence (analysis.nodes.cadence): between retrains the saved one scores."""
from __future__ import annotations

import hashlib
import json
import logging
import pickle
import time
from dataclasses import asdict, dataclass
from datetime import datetime, timedelta, timezone
from pathlib import Path

import duckdb
import polars as pl

from analysis import sql
from analysis.nodes import cadence
from analysis.nodes import lemons
from analysis.nodes.cadence import Cadence, ModelState
from analysis.nodes.lemons import LemonConfig

progress = logging.getLogger("goodput.progress")  # `goodput run` shows the phases of a step that takes minutes

PREFIX = "lemon"  # models/lemon-<as_of>-<version>.pkl


@dataclass
class LemonRun:
    as_of: datetime
    method: str  # classifier | thresholds
    scores: pl.DataFrame
    evaluation: pl.DataFrame
    model_path: Path | None
    why_thresholds: str | None = None
    model: ModelState | None = None  # the classifier trained or loaded (None: thresholds decided)


def data_span(con: duckdb.DuckDBPyConnection) -> tuple[datetime | None, datetime | None]:
    """First and last timestamp of incident history (events, tickets, node states, jobs)."""
    row = con.execute(sql.load("models/model_data_span")).fetchall()[0]
    return row[0], row[1]


class NoHistory(ValueError):
    """Nothing to learn from yet."""


def default_as_of(con: duckdb.DuckDBPyConnection) -> datetime:
    """Midnight after the last timestamp: the end of the data."""
    _, end = data_span(con)
    if end is None:
        raise NoHistory("the warehouse holds no incident history yet (no jobs, node events, tickets or node states)")
    return datetime(end.year, end.month, end.day) + timedelta(days=1)


def as_of_problem(con: duckdb.DuckDBPyConnection, as_of: datetime) -> str | None:
    """Why ``as_of`` is outside the data (None: inside it). The models see data strictly before the as-of: a
    day after the midnight that ends the data scores on nothing new and reads every recent record as absent (no
    node would be acted on), and one before the first day has no history at all."""
    start, end = data_span(con)
    if end is None:
        return None
    first, last = datetime(start.year, start.month, start.day), default_as_of(con)
    if first < as_of <= last:
        return None
    return (f"{as_of:%Y-%m-%d} is outside the data: it runs from {first:%Y-%m-%d} to {last - timedelta(days=1):%Y-%m-%d}, "
            f"so --as-of may be {first + timedelta(days=1):%Y-%m-%d} to {last:%Y-%m-%d} (the models read the data before "
            "it); --force to run anyway")


def score_lemons(con: duckdb.DuckDBPyConnection, as_of: datetime | None = None, cfg: LemonConfig = LemonConfig(),
                 labels: pl.DataFrame | None = None, model_dir: Path | None = None,
                 cad: Cadence = Cadence()) -> LemonRun:
    """Compute lemon_features, lemon_scores and the lemon rows of model_evaluation
    for ``as_of`` using only data strictly before it. With enough labels the
    classifier decides: the one saved in ``model_dir`` unless analysis.nodes.cadence
    says to retrain it; lemon_features then holds every weekly snapshot when it
    is trained (and the evaluation is rebuilt), else only the one scored (and
    the evaluation stays the one of its training)."""
    as_of = as_of or default_as_of(con)
    start, _ = data_span(con)
    known = _known(labels, as_of)
    wanted = known is not None and int(known["is_lemon"].sum()) >= cfg.min_positive_labels
    state = None
    if wanted:
        fp = cadence.fingerprint(definition(cfg, labels))
        last = cadence.latest(model_dir, PREFIX, cad.scope)
        state = cadence.decide("lemon", last, fp, as_of, cad, model_dir)
        model, state = cadence.load_saved("lemon", state, last)
    # the weekly snapshots are training data; scoring (and the thresholds) needs the last one only
    snaps = lemons.snapshots(start or as_of, as_of, cfg.snapshot_days, cfg.window_days) \
        if state is not None and state.trained else [as_of]
    t0 = time.process_time()
    progress.info("    lemons: signals of every node at %d weekly snapshot(s) ...", len(snaps))
    features = lemons.build_features(con, snaps, cfg.window_days)
    current = features.filter(pl.col("as_of") == as_of)
    meta = lemons.threshold_flags(current, cfg)
    trained_at = datetime.now(timezone.utc).replace(tzinfo=None)
    model_path, why, scored, evaluation = None, None, None, None
    if state is not None and state.trained:
        rows = lemons.training_rows(features.filter(pl.col("as_of") < as_of), known, as_of)
        if _lemon_hosts(rows) >= cfg.min_positive_labels:
            progress.info("    lemons: training the classifier on %s labelled snapshot rows ...", f"{rows.height:,}")
            model = lemons.train(rows, cfg.window_days)
            info = {**cadence.common_meta("lemon", fp, definition(cfg, labels), as_of, cad),
                    "trained_at": trained_at.isoformat(timespec="seconds")}
            model_path = _save(model, model_dir, as_of, info) if model_dir else None
            state = cadence.trained("lemon", state.reason, model.version or None, model_path, info)
            scored = lemons.predict(model, current).with_columns(method=pl.lit("classifier"))
        else:
            why, state = "the labelled lemons have no history before as_of", None
    elif state is not None:
        model_path = last[1].with_suffix(".pkl")
        scored = lemons.predict(model, current).with_columns(method=pl.lit("classifier"))
        evaluation = saved_evaluation(con, last[0])
    else:
        why = ("no labels file" if labels is None else
               f"fewer than {cfg.min_positive_labels} lemons labelled before {as_of:%Y-%m-%d}")
    if scored is None:
        scored = meta.select("host", "as_of", score=pl.col("meta_signals").list.len() / len(cfg.thresholds),
                             is_lemon="meta_is_lemon", top_signals="meta_signals", method=pl.lit("thresholds"))
    components = sql.query(con, "models/lemon_components", {"as_of": as_of})
    scores = (scored.join(meta, on=["host", "as_of"], how="left", maintain_order="left")
              .join(components, on="host", how="left", maintain_order="left")
              .select("host", "as_of", "score", "is_lemon", "top_signals", "suggested_component", "method",
                      "meta_is_lemon", "meta_signals"))
    steps = [("schema/lemon_scores", None), ("models/store_lemon_scores", {"as_of": as_of})]
    if evaluation is None:  # no saved classifier: the evaluation is this run's (rebuilt when it is trained)
        evaluation = evaluate(features, known, as_of, cfg, trained_at)
        steps += [("schema/model_evaluation", None), ("models/store_model_evaluation", {"as_of": as_of, "family": "lemon"})]
        cadence.save_evaluation(model_path, evaluation)
    elif not evaluation.height and (restored := cadence.saved_evaluation(model_path)) is not None:
        evaluation = restored  # a new warehouse reusing the saved classifier: the figures it was judged by
        steps += [("schema/model_evaluation", None),
                  ("models/store_model_evaluation", {"as_of": restored["as_of"][0], "family": "lemon"})]
    sql.run_staged(con, {"staged_lemon_scores": scores, "staged_model_evaluation": evaluation}, steps)
    if state is not None:
        state.cpu_s["train" if state.trained else "score"] = time.process_time() - t0
    return LemonRun(as_of, scores["method"][0] if scores.height else "thresholds", scores, evaluation, model_path, why,
                    state)


def definition(cfg: LemonConfig, labels: pl.DataFrame | None) -> dict:
    """What decides the classifier besides the incident history (analysis.nodes.cadence): its configuration,
    signals, seed, and the operator's labels (a new or corrected label retrains it)."""
    return {"format": cadence.FORMAT, "config": asdict(cfg), "signals": list(lemons.SIGNALS), "seed": lemons.SEED,
            "labels": None if labels is None else hashlib.sha256(
                labels.sort("host").write_csv().encode()).hexdigest()[:16]}


def saved_evaluation(con: duckdb.DuckDBPyConnection, meta: dict) -> pl.DataFrame:
    """The lemon rows of model_evaluation stored when the saved classifier was trained (empty in a
    warehouse that did not train it: run() restores them from beside the model)."""
    if not sql.table_exists(con, "model_evaluation"):
        return _eval_frame([])
    return sql.query(con, "models/model_evaluation_at", {"family": "lemon", "as_of": datetime.fromisoformat(meta["as_of"])})


def _lemon_hosts(rows: pl.DataFrame) -> int:
    """Distinct labelled lemons in the training rows (each host has a row per snapshot)."""
    return rows.filter("is_lemon")["host"].n_unique()


def _known(labels: pl.DataFrame | None, as_of: datetime) -> pl.DataFrame | None:
    if labels is None:
        return None
    return labels.filter(pl.col("confirmed_at").is_null() | (pl.col("confirmed_at") < as_of))


def evaluate(features: pl.DataFrame, known: pl.DataFrame | None, as_of: datetime, cfg: LemonConfig,
              trained_at: datetime) -> pl.DataFrame:
    """Split in time and by host: the classifier learns from snapshots whose
    windows end before the last window starts, with the labels known then, and
    never from the hosts it is judged on (five host folds, each predicted by a
    model trained on the other four); the last snapshot is judged against the
    labels known at as_of. Meta's thresholds are judged on the same snapshot."""
    rows = []
    if known is None or not known["is_lemon"].any():
        return _eval_frame(rows)
    split = as_of - timedelta(days=cfg.window_days)
    test = features.filter(pl.col("as_of") == as_of)
    actual = set(known.filter("is_lemon")["host"])
    n, where = test.height, "last_window_hosts_held_out"
    meta = lemons.threshold_flags(test, cfg)
    for metric, value in lemons.precision_recall(set(meta.filter("meta_is_lemon")["host"]), actual, n).items():
        rows.append(("meta_thresholds", metric, value, where, n))
    # the snapshot ending at the split is training data: its window closes where the test window opens
    train_rows = lemons.training_rows(features.filter(pl.col("as_of") <= split), _known(known, split),
                                      split + timedelta(microseconds=1))
    progress.info("    lemons: judging the classifier on the last window, five host folds ...")
    predicted = _host_folds(train_rows, test, cfg)
    if predicted is not None:
        for metric, value in lemons.precision_recall(predicted, actual, n).items():
            rows.append(("lemon_classifier", metric, value, where, n))
    return _eval_frame(rows, trained_at, as_of)


def _host_folds(train_rows: pl.DataFrame, test: pl.DataFrame, cfg: LemonConfig, folds: int = 5) -> set[str] | None:
    """Hosts the classifier calls lemons in ``test``, each fold of hosts scored
    by a model that never saw them; None when a fold's model would have too few lemons."""
    hosts = sorted(set(test["host"]) | set(train_rows["host"]))
    fold_of = pl.DataFrame({"host": hosts, "fold": [i % folds for i in range(len(hosts))]})
    lemon_folds = train_rows.filter("is_lemon").select("host").unique().join(fold_of, on="host")["fold"].to_list()
    if any(sum(f != k for f in lemon_folds) < cfg.min_positive_labels for k in range(folds)):
        return None  # some fold's model would learn from too few lemons
    flagged: set[str] = set()
    for k in range(folds):
        fit = train_rows.join(fold_of.filter(pl.col("fold") != k), on="host", maintain_order="left")
        judged = test.join(fold_of.filter(pl.col("fold") == k), on="host", maintain_order="left").drop("fold")
        if judged.height:
            model = lemons.train(fit.drop("fold"), cfg.window_days)
            flagged |= set(lemons.predict(model, judged).filter("is_lemon")["host"])
    return flagged


def _eval_frame(rows: list, trained_at: datetime | None = None, as_of: datetime | None = None) -> pl.DataFrame:
    return pl.DataFrame(rows, orient="row", schema={"model": pl.Utf8, "metric": pl.Utf8, "value": pl.Float64,
                                                    "split": pl.Utf8, "n": pl.Int64}).with_columns(
        trained_at=pl.lit(trained_at, pl.Datetime("us")), as_of=pl.lit(as_of, pl.Datetime("us")),
        family=pl.lit("lemon"))


def _save(model: lemons.LemonModel, model_dir: Path, as_of: datetime, info: dict) -> Path:
    """models/lemon-<as_of>-<version>.pkl and a .json beside it with the training window."""
    import sklearn

    meta = {"kind": "lemon_classifier", "as_of": as_of.isoformat(), "trained_from": str(model.trained_from),
            "trained_to": str(model.trained_to), "n_rows": model.n_rows, "n_lemons": model.n_lemons,
            "window_days": model.window_days, "threshold": model.threshold, "signals": list(model.signals),
            "sklearn": sklearn.__version__, "seed": lemons.SEED}
    meta = {**info, **meta}
    what = {k: v for k, v in meta.items() if k != "trained_at"}
    model.version = hashlib.sha256(json.dumps(what, sort_keys=True).encode()).hexdigest()[:12]
    model_dir.mkdir(parents=True, exist_ok=True)
    path = model_dir / f"{PREFIX}-{as_of:%Y%m%d}-{model.version}.pkl"
    path.write_bytes(pickle.dumps(model))
    path.with_suffix(".json").write_text(json.dumps({**meta, "version": model.version}, indent=2) + "\n")
    return path
