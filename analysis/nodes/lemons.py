"""Lemon nodes (Meta RSC §IV-A): per-node signals over a trailing window, Meta's
hand thresholds as the baseline, and a calibrated classifier trained on
labelled history.

Features come from sql/models/build_lemon_features.sql; this module stages what SQL
cannot do (hostlist expansion of --exclude), trains and scores. Everything
takes and returns polars frames or plain data.
"""
from __future__ import annotations

import csv
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path

import duckdb
import numpy as np
import polars as pl

from analysis import sql
from analysis.ingest.hosts import HostlistError, expand_hostlist
from analysis.nodes import asof
from analysis.settings import META_SIGNALS, LemonConfig

# Meta's seven signals, then what our data adds.
EXTRA_SIGNALS = ("blamed_failures", "incidents", "drained_incidents", "distinct_causes", "repeated_cause_incidents",
                 "ticket_components", "hours_out_of_service", "drained_incidents_per_30d", "days_since_repair",
                 "benchmark_failures", "straggler_jobs")
SIGNALS = META_SIGNALS + EXTRA_SIGNALS
# days_since_repair is NULL for a node never repaired: as if repaired long ago
NEVER_REPAIRED_DAYS = 365.0
SEED = 20240301


class LabelsError(ValueError):
    """A bad labels file; the message names the file and the line."""


def excludes(con: duckdb.DuckDBPyConnection, max_hosts: int = 100_000, since: datetime | None = None) -> pl.DataFrame:
    """job_id, submit_time, host: each host a job excluded (of the jobs first submitted at or after ``since``,
    None: all): Slurm's `--exclude` in submit lines, Kubernetes' hostname NotIn node affinity (jobs.excluded_hosts).
    An unreadable expression (a typo in a user's submit line) excludes nothing."""
    exprs = sql.query(con, "models/lemon_exclude_expressions", {"since": since})
    hosts = []
    for expr in exprs["expr"].unique().to_list():
        try:
            hosts.append((expr, list(expand_hostlist(expr, max_hosts))))
        except HostlistError:
            hosts.append((expr, []))
    expanded = pl.DataFrame(hosts, schema={"expr": pl.Utf8, "host": pl.List(pl.Utf8)}, orient="row").explode("host")
    slurm = exprs.join(expanded, on="expr").select("job_id", "submit_time", "host")
    kubernetes = sql.query(con, "models/lemon_excluded_hosts", {"since": since})  # node affinity NotIn, already hosts
    return pl.concat([slurm, kubernetes.select(slurm.columns).cast(slurm.schema)]).drop_nulls("host").unique()


def build_features(con: duckdb.DuckDBPyConnection, as_ofs: list[datetime], window_days: int = 28) -> pl.DataFrame:
    """Write lemon_features for every ``as_of`` and return it."""
    sql.stand_ins(con, "straggler_episodes")  # a warehouse whose straggler step has not run yet
    # the earliest window's start: a job submitted before it is in no window
    since = min(as_ofs) - timedelta(days=window_days)
    sql.run_staged(con, {"staged_excludes": excludes(con, since=since),
                         "staged_as_of": pl.DataFrame({"as_of": as_ofs}, schema={"as_of": pl.Datetime("us")})},
                   [("models/view_node_population", None), *asof.steps(con, max(as_ofs)),
                    ("schema/benchmark_verdicts", None), ("models/build_lemon_features", {"window_days": window_days})])
    return con.sql("SELECT * FROM lemon_features ORDER BY as_of, host").pl()  # fixed order: training repeats


def snapshots(start: datetime, as_of: datetime, every_days: int, window_days: int) -> list[datetime]:
    """Weekly points in history whose whole window lies in the data, ending at ``as_of``."""
    out, t = [], as_of
    while t - timedelta(days=window_days) >= start - timedelta(days=1):
        out.append(t)
        t -= timedelta(days=every_days)
    return sorted(out) or [as_of]


def read_labels(path: Path, known_hosts: set[str] | None = None) -> pl.DataFrame:
    """labels/lemons.csv: host, is_lemon, confirmed_at, component. Every error
    names the file and line; a host the warehouse never saw is an error (a typo
    would otherwise become a silent negative)."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise LabelsError(f"{path}: cannot read the labels file ({getattr(exc, 'strerror', None) or exc})") from None
    # one record per line: a stray quote must not merge the labels of the lines after it
    records = []
    for line_no, line in enumerate(text.splitlines(), start=1):
        try:
            records.append((line_no, next(csv.reader([line], strict=True), [])))
        except csv.Error:
            raise LabelsError(f"{path}: line {line_no}: broken CSV quoting (unbalanced quote)") from None
    header = [h.strip().lower() for h in (records[0][1] if records else [])]
    need = {"host", "is_lemon"}
    if not need <= set(header):
        raise LabelsError(f"{path}: line 1: the header must name host and is_lemon "
                          f"(host,is_lemon,confirmed_at,component), got {','.join(header) or 'nothing'}")
    rows, seen = [], {}
    for line_no, values in records[1:]:
        if not values or all(not v.strip() for v in values):
            continue
        if len(values) != len(header):
            raise LabelsError(f"{path}: line {line_no}: {len(values)} fields, the header has {len(header)}")
        row = dict(zip(header, (v.strip() for v in values)))
        flag = row["is_lemon"].lower()
        if flag not in ("true", "false", "1", "0", "yes", "no"):
            raise LabelsError(f"{path}: line {line_no}: is_lemon must be true or false, got '{row['is_lemon'][:40]}'")
        if known_hosts is not None and row["host"] not in known_hosts:
            raise LabelsError(f"{path}: line {line_no}: host '{row['host'][:60]}' is not in the warehouse")
        confirmed = None
        if row.get("confirmed_at"):
            try:
                confirmed = datetime.fromisoformat(row["confirmed_at"].replace("Z", "+00:00")).replace(tzinfo=None)
            except ValueError:
                raise LabelsError(f"{path}: line {line_no}: confirmed_at '{row['confirmed_at'][:40]}' is not an "
                                  "ISO 8601 time") from None
        if row["host"] in seen:
            raise LabelsError(f"{path}: line {line_no}: host '{row['host'][:60]}' is labelled again "
                              f"(first on line {seen[row['host']]}): keep one line per host")
        seen[row["host"]] = line_no
        rows.append({"host": row["host"], "is_lemon": flag in ("true", "1", "yes"), "confirmed_at": confirmed,
                     "component": row.get("component") or None})
    return pl.DataFrame(rows, schema={"host": pl.Utf8, "is_lemon": pl.Boolean, "confirmed_at": pl.Datetime("us"),
                                      "component": pl.Utf8})


# A percentile threshold never falls below these: one occurrence is not a
# pattern, and a sparse signal's p99 is often 0 or 1.
PERCENTILE_FLOOR = {"single_node_failure_rate": 0.5}
COUNT_FLOOR = 2.0


def _cut(signal: str, threshold) -> pl.Expr:
    if isinstance(threshold, str) and threshold.startswith("p"):
        q = float(threshold[1:]) / 100
        floor = PERCENTILE_FLOOR.get(signal, COUNT_FLOOR)
        return pl.max_horizontal(pl.col(signal).quantile(q, "higher").over("as_of"), pl.lit(floor))
    return pl.lit(float(threshold))


def threshold_flags(features: pl.DataFrame, cfg: LemonConfig) -> pl.DataFrame:
    """Meta-style baseline: host, as_of, meta_is_lemon, meta_signals (those at or over threshold)."""
    hits = [pl.when(pl.col(s) >= _cut(s, t)).then(pl.lit(s)) for s, t in cfg.thresholds.items()]
    return features.select(
        "host", "as_of",
        meta_signals=pl.concat_list(hits).list.drop_nulls(),
    ).with_columns(meta_is_lemon=pl.col("meta_signals").list.len() >= cfg.min_signals)


def matrix(features: pl.DataFrame) -> np.ndarray:
    """Signals as model inputs: counts on a log scale (one more incident matters
    less at ten than at one)."""
    x = features.select(pl.col(SIGNALS).cast(pl.Float64)).with_columns(
        pl.col("days_since_repair").fill_null(NEVER_REPAIRED_DAYS).clip(0, NEVER_REPAIRED_DAYS)).to_numpy()
    return np.log1p(np.nan_to_num(x, nan=0.0).clip(min=0))


def training_rows(features: pl.DataFrame, labels: pl.DataFrame, before: datetime) -> pl.DataFrame:
    """Snapshots strictly before ``before`` with the labels known by then: a
    label confirmed later is the future and is not used (an unlabelled host is
    a negative, as an operator's file lists the lemons it found)."""
    known = labels.filter(pl.col("confirmed_at").is_null() | (pl.col("confirmed_at") < before))
    return (features.filter(pl.col("as_of") < before)
            .join(known.select("host", "is_lemon"), on="host", how="left", maintain_order="left")  # order feeds seeded folds
            .with_columns(pl.col("is_lemon").fill_null(False)))


@dataclass
class LemonModel:
    """A trained lemon classifier and what it was trained on (saved beside the warehouse)."""
    estimator: object
    threshold: float
    signals: tuple
    trained_from: datetime
    trained_to: datetime
    n_rows: int
    n_lemons: int
    window_days: int
    version: str = ""


def train(rows: pl.DataFrame, window_days: int, seed: int = SEED) -> LemonModel:
    """Logistic regression on log-scaled signals, classes balanced (lemons are
    ~1.5% of nodes), probabilities calibrated (sigmoid, 3 folds). The decision
    threshold maximises F1 on out-of-fold predictions grouped by host, so no
    host's own snapshots choose its threshold."""
    from sklearn.calibration import CalibratedClassifierCV
    from sklearn.linear_model import LogisticRegression
    from sklearn.model_selection import GroupKFold, StratifiedKFold
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    x, y = matrix(rows), rows["is_lemon"].to_numpy().astype(int)
    hosts = rows["host"].to_numpy()

    def make() -> CalibratedClassifierCV:
        base = make_pipeline(StandardScaler(), LogisticRegression(class_weight="balanced", C=0.05, max_iter=2000,
                                                                   random_state=seed))
        return CalibratedClassifierCV(base, method="sigmoid", cv=StratifiedKFold(3, shuffle=True, random_state=seed))

    oof, scored = np.zeros(len(y)), np.zeros(len(y), dtype=bool)
    lemon_hosts = len(set(hosts[y == 1]))
    if lemon_hosts < 3:
        raise ValueError(f"{lemon_hosts} labelled lemon host(s) in the training history; the classifier needs 3")
    for fit_idx, test_idx in GroupKFold(n_splits=min(5, lemon_hosts)).split(x, y, groups=hosts):
        if len(set(hosts[fit_idx][y[fit_idx] == 1])) >= 3:
            oof[test_idx] = make().fit(x[fit_idx], y[fit_idx]).predict_proba(x[test_idx])[:, 1]
            scored[test_idx] = True
    # the cut comes only from rows a fold predicted; with none with a lemon among them, 0.5
    threshold = best_threshold(oof[scored], y[scored]) if y[scored].any() else 0.5
    model = make().fit(x, y)
    as_ofs = rows["as_of"]
    return LemonModel(model, threshold, SIGNALS, as_ofs.min() - timedelta(days=window_days), as_ofs.max(),
                      len(y), int(y.sum()), window_days)


def best_threshold(p: np.ndarray, y: np.ndarray) -> float:
    """The probability cut with the best F1 (the highest of equals: fewer false
    alarms), never 0: a cut of 0 would call every node a lemon."""
    best, cut = -1.0, 0.5
    for c in np.unique(np.round(p, 4)):
        if c <= 0:
            continue
        pred = p >= c
        tp = float((pred & (y == 1)).sum())
        f1 = 2 * tp / max(pred.sum() + y.sum(), 1)
        if f1 >= best:
            best, cut = f1, float(c)
    return cut


def predict(model: LemonModel, features: pl.DataFrame) -> pl.DataFrame:
    """host, as_of, score, is_lemon, top_signals (the three that push the score
    up most: coefficient x standardised value)."""
    x = matrix(features)
    p = model.estimator.predict_proba(x)[:, 1]
    contrib = _contributions(model, x)
    order = np.argsort(-contrib, axis=1)[:, :3]
    top = [[model.signals[j] for j in row if contrib[i, j] > 0] for i, row in enumerate(order)]
    return features.select("host", "as_of").with_columns(
        score=pl.Series(p), is_lemon=pl.Series(p >= model.threshold),
        top_signals=pl.Series(top, dtype=pl.List(pl.Utf8)))


def _contributions(model: LemonModel, x: np.ndarray) -> np.ndarray:
    """Mean over the calibration folds of each signal's push on the logit."""
    parts = []
    for cal in model.estimator.calibrated_classifiers_:
        pipe = cal.estimator
        scaler, logit = pipe[0], pipe[-1]
        parts.append(scaler.transform(x) * logit.coef_[0])
    return np.mean(parts, axis=0)


def precision_recall(predicted: set[str], actual: set[str], population: int) -> dict[str, float]:
    tp = len(predicted & actual)
    return {"precision": tp / len(predicted) if predicted else float("nan"),
            "recall": tp / len(actual) if actual else float("nan"),
            "false_positive_rate": len(predicted - actual) / max(population - len(actual), 1),
            "flagged": float(len(predicted))}
