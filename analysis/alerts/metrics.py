"""The metrics file node_exporter's textfile collector serves (docs/alerts.md#metrics): Prometheus' text format
0.0.4, one family per FAMILIES entry, each with HELP and TYPE. Names follow Prometheus' conventions (and pass
`promtool check metrics`): prefix goodput_, base units (GPU-hours are written as GPU-seconds, the unit promtool
accepts), `_total` on counters only. Counters are totals over the warehouse's history (they restart when it is
rebuilt, as a counter resets); gauges are the state the last run saw. No sample carries a timestamp: the collector
refuses them."""
from __future__ import annotations

import math
import os
import re
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path

import duckdb
import polars as pl

from analysis import sources, sql


@dataclass(frozen=True)
class Family:
    type: str  # gauge | counter
    help: str
    labels: tuple[str, ...] = ()


FAMILIES: dict[str, Family] = {
    "goodput_last_run_timestamp_seconds": Family("gauge", "When the last goodput run ended (unix seconds), whatever "
                                                          "its status."),
    "goodput_last_success_timestamp_seconds": Family(
        "gauge", "When the last goodput run that built its report (status ok or degraded) ended, unix seconds."),
    "goodput_run_status": Family("gauge", "1 for the last run's status, 0 for the others: ok; degraded (the report "
                                          "is built, a source, step or export was withheld); failed.", ("status",)),
    "goodput_data_health_problems": Family("gauge", "What the last run could not use (the report's data-health "
                                                    "banner), by severity.", ("severity",)),
    "goodput_withheld_steps": Family("gauge", "Steps withheld (crashed, or stopped by a blocking check): they keep "
                                              "their previous contents (table withheld_steps)."),
    "goodput_unusable_source_files": Family("gauge", "Files of a source folder that gave nothing usable: every line "
                                                     "rejected, a format goodput does not read, or unreadable.",
                                            ("source",)),
    "goodput_node_actions": Family("gauge", "Nodes per action at the latest as-of of the node actions.", ("action",)),
    "goodput_node_actions_as_of_timestamp_seconds": Family(
        "gauge", "The as-of of the latest node actions, unix seconds: the evidence they were decided on ends there."),
    "goodput_new_node_alerts": Family("gauge", "Alerts in the last run's Alertmanager payload: nodes newly to be "
                                               "drained (drain), newly escalated for RMA or inspection (escalation).",
                                      ("kind",)),
    "goodput_lemon_nodes": Family("gauge", "Nodes flagged lemons at the latest lemon scoring."),
    "goodput_straggler_episodes_total": Family("counter", "Straggler episodes found in the warehouse's jobs, by "
                                                          "origin (node, job, undetermined).", ("origin",)),
    "goodput_straggler_lost_gpu_seconds_total": Family(
        "counter", "GPU-seconds the jobs lost waiting for stragglers (GPU-hours x 3600), by the episodes' origin.",
        ("origin",)),
    "goodput_ettr_median_ratio": Family("gauge", "The median measured ETTR of the job runs (productive time over "
                                                 "wall-clock time from first eligibility to last end)."),
    "goodput_ettr_measured_runs": Family("gauge", "Job runs with a measured ETTR."),
    "goodput_capacity_gpu_seconds_total": Family("counter", "GPU capacity over the warehouse's days (each node seen "
                                                            "x its GPUs x 24 h), GPU-seconds."),
    "goodput_productive_gpu_seconds_total": Family("counter", "Productive GPU-seconds over the warehouse's days."),
    "goodput_lost_gpu_seconds_total": Family("counter", "GPU-seconds lost over the warehouse's days, by bucket "
                                                        "(disjoint: they add up to the loss).", ("bucket",)),
}
ACTIONS = ("drain_now", "drain_after_job", "watch")  # sql/models/build_node_actions.sql's ladder
ORIGINS = ("node", "job", "undetermined")  # analysis/derive/stragglers.py
LOSS_BUCKETS = ("infrastructure_failures", "user_failures", "preemptions", "second_order_preemptions", "stragglers")
STATUSES = ("ok", "degraded", "failed")  # analysis.commands.data_health
SEVERITIES = ("degraded", "failed")
ALERT_KINDS = ("drain", "escalation")
SUCCESS_LINE = re.compile(r"^goodput_last_success_timestamp_seconds(?:\{[^}]*\})? (\S+)$", re.M)


@dataclass(frozen=True)
class Sample:
    name: str
    value: float
    labels: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class Run:
    """What the run knows of itself: when it ended, its status, when a run last succeeded (None: never known),
    its data-health assessment (analysis.commands.data_health.assess) and its alerts per kind."""
    finished: datetime
    status: str
    last_success: datetime | None
    health: pl.DataFrame
    new_alerts: dict[str, int]


def collect(con: duckdb.DuckDBPyConnection, run: Run) -> list[Sample]:
    """Every sample the warehouse and the run give. A family whose table a warehouse lacks yet (a step that never
    ran) has no samples, rather than a misleading 0."""
    out = [Sample("goodput_last_run_timestamp_seconds", _unix(run.finished))]
    if run.last_success is not None:
        out.append(Sample("goodput_last_success_timestamp_seconds", _unix(run.last_success)))
    out += [Sample("goodput_run_status", float(s == run.status), {"status": s}) for s in STATUSES]
    severities = run.health["severity"].value_counts() if run.health.height else None
    out += [Sample("goodput_data_health_problems", _count(severities, "severity", s), {"severity": s})
            for s in SEVERITIES]
    out.append(Sample("goodput_withheld_steps", sql.count(con, "withheld_steps")))
    unusable = sql.query(con, "ops/data_health_files")
    folders = sorted(set(sources.SOURCES) | set(unusable["source"]))
    out += [Sample("goodput_unusable_source_files", _lookup(unusable, "source", f, "files"), {"source": f})
            for f in folders]
    out += [Sample("goodput_new_node_alerts", run.new_alerts.get(k, 0), {"kind": k}) for k in ALERT_KINDS]
    return out + _node_samples(con) + _job_samples(con)


def _node_samples(con) -> list[Sample]:
    out = []
    if sql.table_exists(con, "node_actions"):
        counts = sql.query(con, "alerts/node_action_counts")
        out += [Sample("goodput_node_actions", _lookup(counts, "action", a, "nodes"), {"action": a})
                for a in sorted(set(ACTIONS) | set(counts["action"]))]
        if counts.height:
            out.append(Sample("goodput_node_actions_as_of_timestamp_seconds", _unix(counts["as_of"].max())))
    if sql.table_exists(con, "lemon_scores"):
        out.append(Sample("goodput_lemon_nodes", sql.query(con, "report/lemon_count")["lemons"][0] or 0))
    return out


def _job_samples(con) -> list[Sample]:
    out = []
    if sql.table_exists(con, "straggler_episodes") and sql.table_exists(con, "jobs"):
        episodes = sql.query(con, "alerts/straggler_totals")
        for origin in sorted(set(ORIGINS) | set(episodes["origin"].drop_nulls())):
            out += [Sample("goodput_straggler_episodes_total", _lookup(episodes, "origin", origin, "episodes"),
                           {"origin": origin}),
                    Sample("goodput_straggler_lost_gpu_seconds_total",
                           _lookup(episodes, "origin", origin, "lost_gpu_seconds"), {"origin": origin})]
    if sql.table_exists(con, "job_run_ettr"):
        ettr = sql.query(con, "alerts/ettr_median").row(0, named=True)
        if ettr["ettr"] is not None and math.isfinite(ettr["ettr"]):
            out.append(Sample("goodput_ettr_median_ratio", ettr["ettr"]))
        out.append(Sample("goodput_ettr_measured_runs", ettr["runs"]))
    if sql.table_exists(con, "goodput_daily"):
        totals = sql.query(con, "alerts/goodput_totals").row(0, named=True)
        out += [Sample("goodput_capacity_gpu_seconds_total", totals["capacity"]),
                Sample("goodput_productive_gpu_seconds_total", totals["productive"])]
        out += [Sample("goodput_lost_gpu_seconds_total", totals[b], {"bucket": b}) for b in LOSS_BUCKETS]
    return out


def render(samples: list[Sample], cluster: str | None = None) -> str:
    """The text file: the families in FAMILIES' order, each sample labelled with the warehouse's cluster when it
    names one (a fleet's clusters then write distinct series into one collector's folder)."""
    for s in samples:
        family = FAMILIES[s.name]
        assert set(s.labels) == set(family.labels), (s.name, s.labels)
    lines = []
    for name, family in FAMILIES.items():
        rows = [s for s in samples if s.name == name]
        if not rows:
            continue
        lines += [f"# HELP {name} {_escape_help(family.help)}", f"# TYPE {name} {family.type}"]
        for s in rows:
            labels = ({"cluster": cluster} if cluster else {}) | s.labels
            text = ",".join(f'{k}="{_escape_label(v)}"' for k, v in labels.items())
            lines.append(f"{name}{{{text}}} {_number(s.value)}" if text else f"{name} {_number(s.value)}")
    return "\n".join(lines) + "\n"


def last_success(path: Path) -> datetime | None:
    """The last success an earlier run's file recorded: a failed run keeps it (an alert on its age then fires)."""
    try:
        found = SUCCESS_LINE.search(path.read_text())
        return datetime.fromtimestamp(float(found.group(1)), timezone.utc) if found else None
    except (OSError, ValueError):
        return None


def write_atomic(path: Path, text: str) -> None:
    """Write a temporary file beside ``path`` (not *.prom: the collector ignores it), then rename it over ``path``:
    the collector, reading at any moment, sees the old file or the new one, never half of one."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        tmp.write_text(text)
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)


def _escape_label(value: str) -> str:
    return str(value).replace("\\", r"\\").replace('"', r"\"").replace("\n", r"\n")


def _escape_help(text: str) -> str:
    return text.replace("\\", r"\\").replace("\n", r"\n")


def _number(value: float) -> str:
    value = float(value)
    return str(int(value)) if value.is_integer() and abs(value) < 2 ** 53 else repr(value)


def _unix(moment: datetime) -> float:
    """Naive times in the warehouse are UTC."""
    return (moment if moment.tzinfo else moment.replace(tzinfo=timezone.utc)).timestamp()


def _lookup(frame: pl.DataFrame, key: str, value: str, column: str) -> float:
    found = frame.filter(pl.col(key) == value)[column]
    return float(found[0] or 0) if found.len() else 0.0


def _count(counts: pl.DataFrame | None, key: str, value: str) -> float:
    return 0.0 if counts is None else _lookup(counts, key, value, "count")
