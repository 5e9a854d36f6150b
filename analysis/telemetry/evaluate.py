"""Alerts against a truth table (job_id, host, kind fault|jitter, metrics, start, end): per method,
job-level precision, recall, F1 and the mean delay from the fault's start to confirmation.

A job's verdict for a method is its earliest confirmed alert (ties: the metric Minder checks first).
It is right when it names the faulty machine; an alert on a healthy job is a false alarm, one naming
another machine of a faulty job a wrong host (it counts against precision and recall both)."""
from __future__ import annotations

import numpy as np
import polars as pl

from analysis.telemetry.detect import METHODS

ALERTS = {"job_id": pl.Utf8, "host": pl.Utf8, "metric": pl.Utf8, "method": pl.Utf8,
          "window_start": pl.Datetime("us"), "confirmed_at": pl.Datetime("us"), "score": pl.Float64,
          "metric_rank": pl.Int32}


def window_labels(frame, truth: pl.DataFrame, cfg) -> np.ndarray:
    """Per window of a frame: True when a faulty machine's fault is under way in it."""
    starts = frame.starts(cfg.frame)
    faults = truth.filter((pl.col("job_id") == frame.job_id) & (pl.col("kind") == "fault"))
    w_start = frame.time_of(starts)
    w_end = frame.time_of(starts + frame.window_len(cfg.frame))
    lab = np.zeros(len(starts), dtype=bool)
    for s, e in faults.select("start", "end").iter_rows():
        lab |= (w_end > np.datetime64(s, "us")) & (w_start < np.datetime64(e, "us"))
    return lab


def as_table(alerts_by_job: dict[str, list[dict]]) -> pl.DataFrame:
    rows = [{k: a[k] for k in ALERTS} for alerts in alerts_by_job.values() for a in alerts]
    return pl.from_dicts(rows, schema=ALERTS) if rows else pl.DataFrame(schema=ALERTS)


def verdicts(alerts: pl.DataFrame) -> pl.DataFrame:
    """(job_id, method) -> the job's first alert (host, metric, confirmed_at)."""
    return (alerts.filter(pl.col("method") != "missing_data").sort("confirmed_at", "metric_rank")
            .group_by("job_id", "method", maintain_order=True).first())


def evaluate(alerts: pl.DataFrame, truth: pl.DataFrame, jobs: list[str], methods=METHODS,
             delay_from: str = "start", against: str = "truth") -> pl.DataFrame:
    """detector_evaluation rows over ``jobs`` (every job judged, alerted or not). The delay runs from
    the fault's start (the simulator's truth), or with delay_from="end" from the failure itself
    (negative: confirmed before it)."""
    faults = truth.filter(pl.col("kind") == "fault").select("job_id", f_host="host", f_time=delay_from)
    judged = pl.DataFrame({"job_id": [str(j) for j in jobs]})
    n_faulty = judged.join(faults, on="job_id").height
    first = verdicts(alerts.with_columns(pl.col("job_id").cast(pl.Utf8))).join(judged, on="job_id", how="semi")
    rows = []
    for method in methods:
        mine = first.filter(pl.col("method") == method).join(faults, on="job_id", how="left")
        right = mine.filter(pl.col("host") == pl.col("f_host"))
        wrong = mine.filter(pl.col("f_host").is_not_null() & (pl.col("host") != pl.col("f_host"))).height
        tp, fp = right.height, mine.height - right.height
        p = tp / (tp + fp) if tp + fp else 0.0
        r = tp / n_faulty if n_faulty else 0.0
        delay = (right["confirmed_at"] - right["f_time"]).dt.total_microseconds().mean() if tp else None
        rows.append({"method": method, "against": against, "precision": p, "recall": r,
                     "f1": 2 * p * r / (p + r) if p + r else 0.0,
                     "mean_detection_delay_s": None if delay is None else delay / 1e6, "n_jobs": judged.height,
                     "faulty_jobs": n_faulty, "false_alarms": fp - wrong, "wrong_host": wrong})
    return pl.DataFrame(rows)


__all__ = ["as_table", "evaluate", "verdicts", "window_labels"]
