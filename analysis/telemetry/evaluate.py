"""Alerts against a truth table (job_id, host, kind fault|jitter, metrics, start, end): per method,
job-level precision, recall, F1 and the mean delay from the fault's start to confirmation."""
from __future__ import annotations

import numpy as np
import polars as pl

from analysis.telemetry.detect import METHODS, Models, first_alert


def window_labels(frame, truth: pl.DataFrame, cfg) -> np.ndarray:
    """Per window of a frame: True when a faulty machine's fault is under way in it."""
    _, starts = frame.windows(cfg.frame)
    faults = truth.filter((pl.col("job_id") == frame.job_id) & (pl.col("kind") == "fault"))
    w_start = frame.time_of(starts)
    w_end = frame.time_of(starts + int(round(cfg.frame.window_s / frame.interval_s)))
    lab = np.zeros(len(starts), dtype=bool)
    for s, e in faults.select("start", "end").iter_rows():
        lab |= (w_end > np.datetime64(s, "us")) & (w_start < np.datetime64(e, "us"))
    return lab


def evaluate(alerts_by_job: dict[str, list[dict]], truth: pl.DataFrame, models: Models,
             methods=METHODS) -> pl.DataFrame:
    """detector_evaluation rows: method, precision, recall, f1, mean_detection_delay_s, n_jobs,
    faulty_jobs, false_alarms, wrong_host."""
    faults = {r["job_id"]: r for r in truth.filter(pl.col("kind") == "fault").iter_rows(named=True)}
    rows = []
    for method in methods:
        tp = fp = wrong = 0
        delays = []
        for job, alerts in alerts_by_job.items():
            a = first_alert(alerts, method, models)
            f = faults.get(job)
            if a is None:
                continue
            if f is not None and a["host"] == f["host"]:
                tp += 1
                delays.append((a["confirmed_at"] - f["start"]).total_seconds())
            else:
                fp += 1
                wrong += f is not None
        n_faulty = sum(1 for j in alerts_by_job if j in faults)
        p = tp / (tp + fp) if tp + fp else 0.0
        r = tp / n_faulty if n_faulty else 0.0
        rows.append({"method": method, "precision": p, "recall": r, "f1": 2 * p * r / (p + r) if p + r else 0.0,
                     "mean_detection_delay_s": sum(delays) / len(delays) if delays else None,
                     "n_jobs": len(alerts_by_job), "faulty_jobs": n_faulty, "false_alarms": fp - wrong,
                     "wrong_host": wrong})
    return pl.DataFrame(rows)
