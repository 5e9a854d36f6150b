"""The fleet report: every cluster side by side, as Meta's tables compare RSC-1 and RSC-2 (failure rate per cause,
MTTF by job size, ETTR, the capacity split, lemons and drains, second-order preemptions), which cluster is getting
worse, and a link to each cluster's own report. Slurm and Kubernetes clusters compare alike: each one's scheduler is
named by where its warehouse's jobs came from (sacct dumps or Kubernetes workloads).

Each cluster is read from its own warehouse (read-only; its snapshot while its nightly writes) with the functions
its own report uses (reports.render.gather and node_models), at the same day (the warehouse's last data day) and
with `goodput run`'s settings: the two reports agree by construction. What no cluster report computes (a rate per
cause over a period, the count of lemons) is read from sql/report/ with parameters. Hosts are named only with
their cluster: two clusters may both have gpu0001."""
from __future__ import annotations

import os
from dataclasses import dataclass
from datetime import date, timedelta
from pathlib import Path
from urllib.parse import quote

import polars as pl
from markupsafe import Markup

from analysis import sql, warehouse
from analysis.derive.taxonomy import load as load_taxonomy
from analysis.fleet.clusters import warehouses_in
from analysis.fleet.trend import WINDOW_DAYS, Window, verdict
from reports import fleet_charts, fleet_tables as T
from reports.render import template_env, inline_javascript, gather, node_models

U0_H, DT_H = 5 / 60, 1.0  # restart and checkpoint (hours) `goodput run` reports with: MetricsSettings' defaults
WINDOW, DAY = timedelta(days=WINDOW_DAYS), timedelta(days=1)


@dataclass
class Cluster:
    name: str
    day: date | None  # its report's day; None: no job has ended in its warehouse yet
    report: dict | None = None  # reports.render.gather at that day: what its own report shows
    models: dict | None = None  # reports.render.node_models; None before `goodput models` ran
    lemons: dict | None = None  # scored nodes and lemons at the latest scoring
    by_cause: pl.DataFrame | None = None  # report/failure_rate_by_cause over the whole period
    trend: dict | None = None
    link: str | None = None  # its own report, relative to the fleet report
    # the source folders its warehouse read: {source: {files, job_instances}} (report/sources_read): its scheduler
    # is where its jobs came from
    sources: dict[str, dict] | None = None
    node_states_known: bool = False  # report/node_states_known: Slurm's node events or Kubernetes' Node Events read


def cluster_reports(out: Path) -> dict[str, Path]:
    """Each cluster's newest report under OUT/<cluster>/reports/ (`goodput run --fleet`'s layout; the files are
    reliability-YYYY-MM-DD.html, so the newest sorts last)."""
    return {p.parent.parent.name: p for p in sorted(Path(out).glob("*/reports/*.html"))}


def render_fleet_report(db_dir: Path, out_dir: Path, cluster_reports: dict[str, Path] | None = None,
                        u0_h: float = U0_H, dt_h: float = DT_H, labels: dict[str, str] | None = None) -> Path:
    """Write out_dir/fleet-report.html comparing every cluster warehouse of ``db_dir`` (<cluster>.duckdb) and
    return its path; ``cluster_reports``: each cluster's own report, linked by a path relative to out_dir."""
    out_dir = Path(out_dir)
    labels = labels if labels is not None else load_taxonomy().labels()
    clusters = [read_cluster(name, path, u0_h, dt_h, labels) for name, path in warehouses_in(db_dir).items()]
    for c in clusters:
        c.link = _link(out_dir, (cluster_reports or {}).get(c.name))
    html = template_env(labels).get_template("fleet.html.j2").render(**context(clusters, labels),
                                                              javascript=Markup(inline_javascript()))
    out_dir.mkdir(parents=True, exist_ok=True)
    path = out_dir / "fleet-report.html"
    path.write_text(html)
    return path


def read_cluster(name: str, db: Path, u0_h: float, dt_h: float, labels: dict[str, str]) -> Cluster:
    con = warehouse.connect(db, read_only=True)
    try:
        # the day its own report covers (pipelines/runner.py); no jobs table: no run has ingested anything yet
        day = sql.scalar(con, "ops/last_data_day") if sql.table_exists(con, "jobs") else None
        if day is None:
            return Cluster(name, None)
        models = node_models(con)
        sources = {r["source"]: r for r in sql.query(con, "report/sources_read").iter_rows(named=True)}
        rate = lambda start, end: sql.query(con, "report/failure_rate_by_cause", {"start": start, "end": end})  # noqa: E731
        whole, recent, before = rate(None, day), rate(day - WINDOW + DAY, day), rate(day - 2 * WINDOW + DAY, day - WINDOW)
        return Cluster(name, day, gather(con, day, u0_h, dt_h, labels=labels), models,
                       sql.query(con, "report/lemon_count").row(0, named=True) if models else None,
                       whole, trend(day, whole, recent, before), sources=sources,
                       node_states_known=bool(sql.scalar(con, "report/node_states_known")))
    finally:
        con.close()


def _window(rates: pl.DataFrame) -> Window:
    return Window(int(rates["failures"].sum()), float(rates["node_days"][0]) if rates.height else 0.0)


def trend(day: date, whole: pl.DataFrame, recent: pl.DataFrame, before: pl.DataFrame) -> dict:
    """The last 30 days against the 30 before, judged only when both windows are full of data (as the cluster
    report draws its rolling rate only from its 30th day); the cause that moved most."""
    first = whole["first_day"][0] if whole.height else None
    full = first is not None and first <= day - 2 * WINDOW + DAY
    days = (day - first).days + 1 if first is not None else 0
    if not full:  # no row at all: no infrastructure failure yet (failure_rate_over_time has a row per cause seen)
        return {"judged": False, "days": days, "needed": 2 * WINDOW_DAYS, "no_failure": first is None}
    now, then = _window(recent), _window(before)
    per = lambda f: {r["cause"]: r["rate"] or 0.0 for r in f.iter_rows(named=True)}  # noqa: E731
    a, b = per(recent), per(before)
    moves = sorted(((a.get(k, 0.0) - b.get(k, 0.0), k) for k in a.keys() | b.keys()), reverse=True)
    judged = verdict(now, then)
    moved = moves[0] if judged == "worse" else moves[-1] if judged == "better" else None
    return {"judged": True, "days": days, "recent": now, "before": then, "verdict": judged, "split": day - WINDOW + DAY,
            "moved": {"cause": moved[1], "by": moved[0]} if moved else None}


def _link(out_dir: Path, report: Path | None) -> str | None:
    """A cluster report's address from the fleet report: relative, so the folder can be moved or served."""
    if report is None:
        return None
    return quote(Path(os.path.relpath(Path(report).resolve(), out_dir.resolve())).as_posix())


def context(clusters: list[Cluster], labels: dict[str, str]) -> dict:
    """The template's tables (a column per cluster), charts (every cluster with data in each) and notes (what a
    cluster has too little data for, in words)."""
    names = [c.name for c in clusters]
    data = [c for c in clusters if c.report is not None]
    frames = {"rates": T.rate_frame(data, labels), "mttf": T.mttf_frame(data), "ettr": T.ettr_frame(data),
              "capacity": T.capacity_frame(data)}
    builders = {"rates": fleet_charts.rates_by_cause, "mttf": fleet_charts.mttf_by_size,
                "ettr": fleet_charts.ettr_by_size, "capacity": fleet_charts.capacity_split}
    drawn = [c.name for c in data]  # the colour domain: the same colour for a cluster in every chart
    charts = {k: builders[k](f, drawn) for k, f in frames.items() if f.height}  # nothing to draw: words, no frame
    return {"clusters": clusters, "charts": charts, "window": WINDOW_DAYS, "names": names,
            "summary": T.summary_rows(data), "rates": T.rate_rows(frames["rates"], labels),
            "mttf": T.mttf_rows(data), "ettr": T.ettr_rows(data), "capacity": T.capacity_rows(data),
            "second_order": T.second_order_rows(data), "nodes": T.node_rows(data), "trend": T.trend_rows(data),
            "interruptions": T.interruption_rows(data), "stragglers": T.straggler_rows(data),
            "top_nodes": T.top_nodes(data), "top_per_cluster": T.TOP_NODES, "notes": T.notes(clusters)}
