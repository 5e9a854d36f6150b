"""What SREs watch, written at the end of every `goodput run` (docs/alerts.md): a Prometheus metrics file for
node_exporter's textfile collector (metrics.py), the Alertmanager alerts of the new drain and escalation decisions
(alertmanager.py), posted only to an Alertmanager the operator names, and a Grafana dashboard over the metrics
(grafana-dashboard.json, shipped in the package)."""
from __future__ import annotations

import json
from datetime import datetime, timezone
from pathlib import Path

import duckdb
import polars as pl

from analysis import warehouse
from analysis.alerts import alertmanager, metrics
from analysis.commands.data_health import FAILED
from analysis.fleet import identity

METRICS_FILE = Path("metrics") / "goodput.prom"  # under --out; what the textfile collector reads (docs/alerts.md)
ALERTS_FILE = Path("alerts") / "alertmanager.json"
DASHBOARD = Path(__file__).with_name("grafana-dashboard.json")


def publish(db: Path, out: Path, status: str, health: pl.DataFrame, report: Path | None = None,
            url: str | None = None, timeout_s: float = alertmanager.TIMEOUT_S,
            now: datetime | None = None) -> list[str]:
    """Write ``out``/METRICS_FILE and ``out``/ALERTS_FILE from the warehouse and the run's ``status`` and data
    ``health``; post the alerts to the Alertmanager at ``url`` when given and there are any. Returns what went wrong
    (the run warns of it), never raises for it: the run's own outputs stand without these."""
    now = now or datetime.now(timezone.utc)
    metrics_path = Path(out) / METRICS_FILE
    try:
        con = warehouse.connect(db, read_only=True)
        try:
            cluster = identity.cluster_of(con)
            new = alertmanager.new_decisions(con)
            payload = alertmanager.alerts(new, now, cluster, report.resolve().as_uri() if report else None)
            succeeded = now if status != FAILED else metrics.last_success(metrics_path)
            counts = dict(new["kind"].value_counts().iter_rows())
            run = metrics.Run(now, status, succeeded, health, counts)
            text = metrics.render(metrics.collect(con, run), cluster)
        finally:
            con.close()
        metrics.write_atomic(Path(out) / ALERTS_FILE, json.dumps(payload, indent=1) + "\n")
        metrics.write_atomic(metrics_path, text)
    except (OSError, duckdb.Error) as exc:
        return [f"the metrics and alerts files (docs/alerts.md) were not written: {exc}"]
    problem = alertmanager.post(url, payload, timeout_s) if url and payload else None
    return [problem] if problem else []
