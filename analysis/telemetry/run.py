"""Detection over the warehouse, job by job: train on completed jobs (on a cadence: analysis.nodes.cadence),
judge the jobs telemetry covers that were not judged yet, store machine_alerts, the confirmed alerts as
node events, and detector_evaluation."""
from __future__ import annotations

import time
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path

import duckdb
import numpy as np
import polars as pl

from analysis import sql
from analysis.nodes import cadence as cadence_mod
from analysis.nodes.cadence import Cadence, ModelState
from analysis.settings import TelemetryTraining
from analysis.telemetry import detect, evaluate, frames, links, pending, saved, train
from analysis.telemetry.detect import DetectConfig, Models
from analysis.telemetry.truth import TRUTH_SCHEMA


class NoTelemetry(ValueError):
    """Nothing to learn from or to judge."""


@dataclass
class TelemetryRun:
    alerts: pl.DataFrame
    model_version: str
    model_path: Path | None
    jobs: int  # judged this run
    trained_on: int
    judged: list[str] = None
    suspects: list = None  # (job_id, host): training machines the thresholds left out (train.robust_threshold)
    model: ModelState | None = None  # trained or loaded, why, its age
    machine_hours: float = 0.0  # of telemetry scored this run (machines x hours of the judged jobs)


ALERT_SCHEMA = {**evaluate.ALERTS, "instance": pl.Int32}
FAMILIES = (("network", ("infiniband", "roce", "pause", "pfc", "ecn", "nic", "eth", "rdma")),
            ("gpu", ("dcgm", "gpu", "nvlink", "pcie", "clock", "sm_")), ("host", ("cpu", "mem", "load")))


def family(metric: str) -> str:
    low = metric.lower()
    return next((name for name, keys in FAMILIES if any(k in low for k in keys)), "other")


def stage(con: duckdb.DuckDBPyConnection, jobs: pl.DataFrame) -> None:
    """Every covered job's telemetry in one temporary table sorted by job (one pass over telemetry)."""
    sql.run_staged(con, {"staged_telemetry_jobs": jobs.select("job_id", "instance", "hosts", "telemetry_from",
                                                              "telemetry_to")},
                   [("telemetry/stage_telemetry_job_rows", None)])


def job_rows(con: duckdb.DuckDBPyConnection, job: dict) -> pl.DataFrame:
    return sql.query(con, "telemetry/job_rows", {"job_id": job["job_id"], "instance": job["instance"]})


def job_frame(con: duckdb.DuckDBPyConnection, job: dict, cfg: DetectConfig,
              rows: pl.DataFrame | None = None) -> frames.JobFrame | None:
    """The job's machine-level frame. Per-peer metrics (`<name>@<peer>`) are the links' business."""
    rows = job_rows(con, job) if rows is None else rows
    rows = rows.filter(~pl.col("metric").str.contains("@", literal=True))
    return frames.build(f"{job['job_id']}", rows, cfg.frame, hosts=job["hosts"])


def run(con: duckdb.DuckDBPyConnection, cfg: DetectConfig = DetectConfig(), model_dir: Path | None = None,
        max_train_jobs: int = TelemetryTraining.max_train_jobs, min_train_jobs: int = TelemetryTraining.min_train_jobs,
        epochs: int = TelemetryTraining.epochs, progress=None,
        lookback_days: float | None = None, split: datetime | None = None,
        cadence: Cadence = Cadence()) -> TelemetryRun:
    """Score the covered jobs not yet scored (new, or their coverage changed) with the saved detector,
    and store their telemetry_jobs, machine_alerts, link_suspects (C4, where per-peer metrics exist) and
    confirmed Minder alerts as node events, replacing only those jobs' earlier results (one job in
    memory at a time). The detector is retrained on the last ``max_train_jobs`` completed covered jobs
    when analysis.nodes.cadence says so (or when its metric set changed: saved.metric_change); a retrained
    detector rescores every covered job that ended within ``lookback_days`` of the latest (None: all)
    besides the unscored ones; older verdicts stay with the model that gave them (model_version).
    With ``split`` (a held-out evaluation), train only on the jobs that ended before it and judge only
    those that started at or after it, always training."""
    if not sql.table_exists(con, "jobs"):
        raise NoTelemetry("no jobs in the warehouse: telemetry is judged per job (run `goodput run` with sacct dumps)")
    min_samples = 2 * max(1, int(cfg.frame.window_s // (cfg.frame.interval_s or 10)))
    jobs = sql.query(con, "telemetry/jobs", {"min_samples": min_samples})
    if jobs.height == 0:
        raise NoTelemetry("no multi-node job is covered by telemetry")
    recent = jobs if lookback_days is None else jobs.filter(
        pl.col("end_time") >= jobs["end_time"].max() - timedelta(days=lookback_days))
    # held out: what training sees (the models, the metric ranking's labels) ended before the split
    before = jobs if split is None else jobs.filter(pl.col("end_time") < split)
    healthy = before.filter(pl.col("state") == "COMPLETED").tail(max_train_jobs)
    definition = saved.definition(cfg, epochs, max_train_jobs, min_train_jobs, lookback_days, split)
    fp = cadence_mod.fingerprint(definition)
    data_to = jobs["end_time"].max()
    last = cadence_mod.latest(model_dir, saved.PREFIX, cadence.scope)
    stored = pending.scored_jobs(con)
    if split is not None:
        state = ModelState("telemetry", True, "held-out evaluation")
        new = judge = recent.filter(pl.col("start_time") >= split)
    else:
        state = cadence_mod.decide("telemetry", last, fp, data_to, cadence, model_dir)
        new = judge = pending.unscored(jobs, stored)
    pool_keys = [saved.key(j, i) for j, i in healthy.select("job_id", "instance").iter_rows()]
    if not state.trained and new.height:
        stage(con, new)
        judge = pending.staged_metrics(con, new)
        change = saved.metric_change(last[0], pool_keys, {**pending.job_metrics(stored), **pending.job_metrics(judge)})
        if change:
            state = ModelState("telemetry", True, change)
    t0 = time.process_time()
    if state.trained:
        if healthy.height < min_train_jobs:
            raise NoTelemetry(f"telemetry covers {healthy.height} completed multi-node job(s); at least "
                              f"{min_train_jobs} are needed to learn what normal looks like")
        train_pool = pending.among(jobs, recent if split is None else before, healthy)
        staged = pending.among(jobs, recent if split is None else judge, new, train_pool)
        stage(con, staged)
        staged = pending.staged_metrics(con, staged)
        judge = pending.among(staged, recent, new) if split is None else pending.among(staged, judge)
        models, meta = _train(con, cfg, healthy, train_pool if split is not None else None, epochs, definition, fp,
                              data_to, cadence)
        meta["metric_set"] = saved.metric_set(pending.job_metrics(staged), pool_keys)
        version, path = saved.save(models, model_dir, meta) if model_dir else \
            (f"{meta['trained_to']:%Y%m%dT%H%M%S}", None)
        state = cadence_mod.trained("telemetry", state.reason, version, path, meta)
        state.cpu_s["train"] = time.process_time() - t0
        trained_on = meta["train_jobs"]
    else:
        models = saved.load(*last)
        version, path, trained_on = state.version, last[1].with_suffix(".pt"), last[0].get("train_jobs", 0)
        if "metrics" not in judge.columns:  # nothing new: nothing staged
            judge = judge.with_columns(metrics=pl.lit(None, pl.List(pl.Utf8)))
        staged = judge
    t0 = time.process_time()
    table, link_table = _score(con, models, judge, cfg, progress)
    table = table.with_columns(model_version=pl.lit(version))
    if staged.height:  # nothing judged, nothing staged: the warehouse is left untouched
        sql.run_staged(con, {"staged_alerts": table, "staged_alert_events": alert_events(table, version),
                             "staged_jobs": judge.with_columns(model_version=pl.lit(version)), "staged_links": link_table,
                             "staged_job_metrics": staged.select("job_id", "instance", "metrics")},
                       [("schema/machine_alerts", None), ("schema/telemetry_jobs", None), ("schema/link_suspects", None),
                        ("schema/detector_evaluation", None), ("telemetry/store_machine_alerts", None)])
    state.cpu_s["score"] = time.process_time() - t0
    hours = judge.select(((pl.col("telemetry_to") - pl.col("telemetry_from")).dt.total_seconds() / 3600
                          * pl.col("hosts").list.len()).sum()).item() if judge.height else 0.0
    return TelemetryRun(table, version, path, judge.height, trained_on, judge["job_id"].cast(pl.Utf8).to_list(),
                        models.suspects, state, float(hours or 0.0))


def _train(con, cfg: DetectConfig, healthy: pl.DataFrame, pool: pl.DataFrame | None, epochs: int, definition: dict,
           fp: str, data_to: datetime, cadence: Cadence) -> tuple[Models, dict]:
    """Train on the healthy jobs' frames (their telemetry staged). With ``pool`` (a held-out evaluation)
    the metrics are ranked now on its jobs' labelled windows; without, in the paper's order until
    rank_metrics ranks them after this run's attribution (``ranked`` False in the model's JSON)."""
    train_frames = [f for f in (job_frame(con, j, cfg) for j in healthy.iter_rows(named=True)) if f is not None]
    labelled = labelled_windows(con, pool, train_frames, cfg) if pool is not None else None
    models = train.train(train_frames, cfg, epochs=epochs, labelled=labelled)
    meta = {**cadence_mod.common_meta("telemetry", fp, definition, data_to, cadence), "ranked": pool is not None,
            "trained_from": healthy["start_time"].min(), "trained_to": healthy["end_time"].max(),
            "train_jobs": len(train_frames), "window_s": cfg.frame.window_s, "stride_s": cfg.frame.stride_s,
            "interval_s": cfg.frame.interval_s, "continuity_s": cfg.continuity_s, "epochs": epochs,
            "hidden": saved.ARCH["hidden"], "latent": saved.ARCH["latent"], "layers": saved.ARCH["layers"],
            "trained_at": cadence_mod.now()}
    return models, meta


def _score(con, models: Models, judge: pl.DataFrame, cfg: DetectConfig, progress=None):
    """machine_alerts and link_suspects rows of the judged jobs (staged), one job in memory at a time."""
    alerts, suspects = [], []
    for i, job in enumerate(judge.iter_rows(named=True)):
        rows = job_rows(con, job)
        frame = job_frame(con, job, cfg, rows)
        judged = frame is not None and len(frame.starts(cfg.frame)) > 0  # shorter than a window: nothing to say
        alerts += [{**a, "instance": job["instance"]} for a in (detect.detect(models, frame, cfg) if judged else [])]
        peers = links.peer_matrix(rows.with_columns(job_id=pl.lit(str(job["job_id"]))))
        if peers.height:
            for metric, cells in peers.partition_by("metric", as_dict=True).items():
                suspects.append(links.localise(cells).with_columns(metric=pl.lit(metric[0]),
                                                                   instance=pl.lit(job["instance"], pl.Int32)))
        if progress and (i + 1) % 20 == 0:
            progress(i + 1, judge.height)
    table = pl.from_dicts(alerts, schema=ALERT_SCHEMA) if alerts else pl.DataFrame(schema=ALERT_SCHEMA)
    link_table = pl.concat(suspects) if suspects else pl.DataFrame(
        schema={**links.SUSPECTS, "metric": pl.Utf8, "instance": pl.Int32})
    return table, link_table


def rank_metrics(con: duckdb.DuckDBPyConnection, cfg: DetectConfig, model_dir: Path | None,
                 scope: str | None = None) -> list[str] | None:
    """Minder's metric priority for this warehouse's latest detector when it was trained unranked (``ranked``
    false in its JSON), run once attribution is built: a decision tree (train.rank) on the windows of its
    training jobs (normal) and of the failed jobs of its lookback that attribution blamed on a machine from
    other evidence (labelled_windows); the paper's order without such a job. The order is saved with the
    model and its alerts' metric_rank follow it. Ranked at training instead, a nightly would learn from
    the previous run's attribution, which a fresh run over the same files does not have yet: here both
    see this run's. None when there is nothing to rank."""
    last = cadence_mod.latest(model_dir, saved.PREFIX, scope)
    if last is None or last[0].get("ranked", True) or not all(
            sql.table_exists(con, t) for t in ("telemetry_jobs", "failure_attribution")):
        return None
    meta, path = last
    lookback, data_to = meta["definition"]["lookback_days"], datetime.fromisoformat(meta["data_to"])
    jobs = sql.query(con, "telemetry/training_pool", {"data_to": data_to})  # what training chose from
    recent = jobs if lookback is None else jobs.filter(pl.col("end_time") >= data_to - timedelta(days=lookback))
    healthy = jobs.filter(pl.col("state") == "COMPLETED").tail(meta["definition"]["max_train_jobs"])
    priority, blamed = train.default_priority(meta["metrics"]), _blamed(con, recent)
    if blamed.height:
        stage(con, pending.among(jobs, healthy, blamed))
        normal = [f for f in (job_frame(con, j, cfg) for j in healthy.iter_rows(named=True)) if f is not None]
        labelled = labelled_windows(con, recent, normal, cfg)
        if labelled:
            priority = train.rank(labelled, saved.load_suspects(meta), meta["metrics"], cfg)
    saved.ranked(path, priority)
    sql.run(con, "telemetry/rank_machine_alerts", {"version": meta["version"], "priority": priority})
    return priority


def _blamed(con, jobs: pl.DataFrame) -> pl.DataFrame:
    """The failed jobs among ``jobs`` attribution blamed on a machine from other evidence, with the host
    and the event's time."""
    return jobs.join(sql.query(con, "telemetry/blamed_hosts"), on=["job_id", "instance"]).filter(
        pl.col("state") != "COMPLETED")


def labelled_windows(con, jobs: pl.DataFrame, healthy: list[frames.JobFrame], cfg: DetectConfig,
                     lead_s: int = 600) -> tuple[list, list] | None:
    """Windows to rank the metrics on (Minder's decision tree): the completed jobs' windows are normal;
    in a failed job that attribution blamed on a machine from other evidence, the windows of the lead_s
    before the blamed event are abnormal (their telemetry staged). None before any such job exists."""
    if not sql.table_exists(con, "failure_attribution"):
        return None
    blamed = _blamed(con, jobs)
    faulty, labels = [], []
    for job in blamed.iter_rows(named=True):
        frame = job_frame(con, job, cfg)
        if frame is None:
            continue
        truth = pl.DataFrame([{"job_id": frame.job_id, "host": job["host"], "kind": "fault", "fault_type": None,
                               "metrics": "", "start": job["event_time"] - timedelta(seconds=lead_s),
                               "end": job["event_time"]}], schema=TRUTH_SCHEMA)
        faulty.append(frame)
        labels.append(evaluate.window_labels(frame, truth, cfg))
    if not faulty:
        return None
    normal = [np.zeros(len(f.starts(cfg.frame)), dtype=bool) for f in healthy]
    return healthy + faulty, normal + labels


def alert_events(alerts: pl.DataFrame, version: str) -> pl.DataFrame:
    """Confirmed Minder alerts as node_events rows (source telemetry, kind machine_outlier, code = family)."""
    # line numbers follow the alerts, not the metric priority they were found in (it is ranked after them)
    minder = alerts.filter(pl.col("method") == "minder").sort("confirmed_at", "job_id", "host", "metric")
    return minder.select(
        event_time=pl.col("confirmed_at"), host=pl.col("host"), source=pl.lit("telemetry"),
        kind=pl.lit("machine_outlier"), code=pl.col("metric").map_elements(family, return_dtype=pl.Utf8),
        severity=pl.lit("warning"),
        message=pl.format("{} drifted from its peers in job {} since {} (Minder score {}, models {})",
                          pl.col("metric"), pl.col("job_id"), pl.col("window_start"), pl.col("score").round(1),
                          pl.lit(version)),
        device=pl.col("metric"), reporter=pl.lit("goodput-minder"),
        file=pl.format("goodput:telemetry/{}/{}", pl.col("job_id"), pl.col("instance")),
        line_no=pl.int_range(1, pl.len() + 1, dtype=pl.Int64).over("job_id", "instance"))


def evaluate_against_attribution(con: duckdb.DuckDBPyConnection) -> pl.DataFrame | None:
    """detector_evaluation from the stored alerts, against what attribution blamed from other
    evidence: a failed job whose primary cause names a host is faulty on that host (the delay runs
    from that event: negative = confirmed before it); a completed job is healthy; the rest are not
    judged. None when there is nothing to judge."""
    if not all(sql.table_exists(con, t) for t in ("telemetry_jobs", "failure_attribution")):
        return None
    jobs = con.sql("SELECT * FROM telemetry_jobs").pl()
    blamed = sql.query(con, "telemetry/blamed_hosts")
    keyed = jobs.join(blamed, on=["job_id", "instance"], how="left")
    judged = keyed.filter((pl.col("state") == "COMPLETED") | pl.col("host").is_not_null())
    if judged.height == 0:
        return None
    truth = judged.filter(pl.col("host").is_not_null()).select(
        job_id=pl.col("job_id").cast(pl.Utf8), host="host", kind=pl.lit("fault"), fault_type=pl.lit(None, pl.Utf8),
        metrics=pl.lit(""), start=pl.col("event_time"), end=pl.col("event_time"))
    alerts = con.sql("SELECT * FROM machine_alerts").pl()
    ev = evaluate.evaluate(alerts, truth.cast(TRUTH_SCHEMA), judged["job_id"].cast(pl.Utf8).to_list(),
                           delay_from="end", against="attribution")
    ev = ev.with_columns(model_version=pl.lit(jobs["model_version"][0] if jobs.height else None))
    sql.run_staged(con, {"staged_evaluation": ev}, [("telemetry/store_detector_evaluation", None)])
    return ev
