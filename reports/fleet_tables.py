"""The fleet report's tables and chart frames, from each cluster's gathered report (reports/fleet.py).

A table row is ``{key, label, title, cells: {cluster: {value, text}}}``: one column per cluster, the number as its
own report shows it (text) and as it is (value, a data attribute: tests compare it with the cluster's report).
A chart frame is the cluster report's rows with a ``cluster`` column."""
from __future__ import annotations

import polars as pl

from analysis.derive.taxonomy import cause_label
from analysis.sources import JOBS_FROM
from analysis.fleet.trend import WINDOW_DAYS
from reports.headline import loss_split
from reports.charts import CAPACITY_PARTS
from reports.render import RUN_MIN_GPUS, RUN_MIN_HOURS, SCHEDULER_WORDS, fmt_num, fmt_pct

SECOND_ORDER = "second-order preemption"  # its kind in sql/report/loss_by_size.sql
TOP_NODES = 5  # per cluster: every cluster is in the table, and a large cluster does not crowd a small one out


def _cell(value, text: str) -> dict:
    return {"value": value, "text": text}


def _row(key: str, label: str, cells: dict, title: str | None = None) -> dict:
    return {"key": key, "label": label, "title": title, "cells": cells}


def scheduler_cell(c) -> dict:
    """The scheduler whose records the cluster's jobs were read from (value: the source folders, '+'-joined); a
    warehouse holding both says both, with how many job instances each gave."""
    jobs = {s: n for s in JOBS_FROM if (n := (c.sources or {}).get(s, {}).get("job_instances"))}
    if not jobs:
        return _cell(None, "not known: no job's file is recorded")
    name = lambda s: SCHEDULER_WORDS[s]["name"]  # noqa: E731 - the name the cluster's own report uses
    if len(jobs) == 1:
        return _cell(next(iter(jobs)), name(next(iter(jobs))))
    return _cell("+".join(jobs), " and ".join(f"{name(s)} ({fmt_num(n)} job instances)" for s, n in jobs.items()))


def summary_rows(data: list) -> list[dict]:
    h = {c.name: c.report["head"] for c in data}
    num = lambda key, label, digits=0: _row(key, label, {n: _cell(v[key], fmt_num(v[key], digits)) for n, v in h.items()})  # noqa: E731
    return [
        _row("day", "report covers data up to", {c.name: _cell(c.day.isoformat(), f"{c.day:%Y-%m-%d}") for c in data}),
        _row("scheduler", "scheduler (where its jobs were read from)", {c.name: scheduler_cell(c) for c in data}),
        _row("nodes", "nodes", {c.name: _cell(n, fmt_num(n)) for c in data
                                for n in [sum(s["nodes"] for s in c.report["node_sizes"])]}),
        num("job_instances", "job instances"), num("gpu_hours", "GPU-hours of jobs"),
        _row("goodput_7d", "goodput, last 7 days", {n: _cell(v["goodput_7d"], fmt_pct(v["goodput_7d"])) for n, v in h.items()}),
        num("r_per_1000_node_days", "failures per 1,000 node-days (Meta's r)", 2),
        num("infra_failed_jobs", "job instances failed by infrastructure"),
        num("infra_lost_gpu_hours", "GPU-hours lost to infrastructure failures"),
    ]


def rate_frame(data: list, labels: dict[str, str]) -> pl.DataFrame:
    """Failures per 1,000 node-days per cause over each cluster's whole period; a cause a cluster never had is a
    rate of 0 there (it ran and had none), so every cluster with runtime has a bar for every cause."""
    rows = [{"cluster": c.name, **r} for c in data for r in c.by_cause.select("cause", "failures", "rate").to_dicts()]
    causes = sorted({r["cause"] for r in rows})
    ran = [c.name for c in data if c.report["head"]["r_per_1000_node_days"] is not None]
    if not causes or not ran:
        return pl.DataFrame()
    grid = pl.DataFrame({"cluster": ran}).join(pl.DataFrame({"cause": causes}), how="cross")
    got = pl.DataFrame(rows, schema={"cluster": pl.Utf8, "cause": pl.Utf8, "failures": pl.Int64, "rate": pl.Float64})
    out = grid.join(got, on=["cluster", "cause"], how="left").with_columns(
        pl.col("failures").fill_null(0), pl.col("rate").fill_null(0.0),
        cause_label=pl.col("cause").replace_strict({k: cause_label(k, labels) for k in causes}, return_dtype=pl.Utf8))
    return out.sort("cause", "cluster")


def rate_rows(frame: pl.DataFrame, labels: dict[str, str]) -> list[dict]:
    if frame.height == 0:
        return []
    order = frame.group_by("cause").agg(pl.col("rate").sum()).sort(["rate", "cause"], descending=[True, False])
    return [_row(f"rate:{cause}", cause_label(cause, labels), {
        r["cluster"]: _cell(r["rate"], f"{fmt_num(r['rate'], 2)} ({fmt_num(r['failures'])})")
        for r in frame.filter(pl.col("cause") == cause).iter_rows(named=True)}, title=cause) for cause in order["cause"]]


def interruption_rows(data: list) -> list[dict]:
    """Llama 3's interruption table side by side (each cluster's report/interruptions at its own day): a row per
    cause any cluster had, unplanned by their count over the fleet, planned work after them; each cluster's count
    and rate per 1,000 node-days (value: the count, rate: the rate). A cause a cluster never had is 0 there; a
    cluster with no incident or planned outage at all has "—" in every row (its note says why)."""
    its = {c.name: c.report["interruptions"] for c in data if c.report.get("interruptions")}
    if not its:
        return []
    causes: dict[str, dict] = {}
    for it in its.values():
        for r in it["rows"] + it["planned"]:
            k = causes.setdefault(r["cause"], {"label": r["label"], "component": r["component"],
                                               "planned": r["planned"], "total": 0})
            k["total"] += r["interruptions"]
    rows = [_row("interruptions_node_days", "node-days observed (nodes)", {
                n: _cell(it["node_days"], f"{fmt_num(it['node_days'])} ({fmt_num(it['nodes'])})") for n, it in its.items()}),
            _row("interruptions_total", "unplanned interruptions, all causes", {
                n: {**_cell(it["total"], f"{fmt_num(it['total'])} ({fmt_num(it['per_1000'], 2)})"), "rate": it["per_1000"]}
                for n, it in its.items()})]
    for cause in sorted(causes, key=lambda k: (causes[k]["planned"], -causes[k]["total"], causes[k]["label"], k)):
        k, cells = causes[cause], {}
        for n, it in its.items():
            r = next((r for r in it["rows"] + it["planned"] if r["cause"] == cause), None)
            count, rate = (r["interruptions"], r["per_1000_node_days"]) if r else (0, 0.0)
            cells[n] = {**_cell(count, f"{fmt_num(count)} ({fmt_num(rate, 2)})"), "rate": rate}
        label = k["label"] + (" (scheduled work, not in the totals)" if k["planned"] else "")
        rows.append({**_row(f"interruptions:{cause}", label, cells, title=cause), "component": k["component"],
                     "planned": k["planned"], "first_planned": k["planned"] and not rows[-1].get("planned")})
    return rows


def _measured(c) -> list[dict]:
    return [m for m in c.report["mttf"] if m["mttf_hours"] is not None]


def mttf_frame(data: list) -> pl.DataFrame:
    cols = ["bucket_gpus", "failures", "mttf_hours", "mttf_ci_low_hours", "mttf_ci_high_hours"]
    rows = [{"cluster": c.name, **{k: m[k] for k in cols}} for c in data for m in _measured(c)]
    return pl.DataFrame(rows) if rows else pl.DataFrame()


def mttf_rows(data: list) -> list[dict]:
    """A row per job-size bucket any cluster measured: MTTF with its 90% interval; where a cluster ran the size
    without an infrastructure failure, the runtime it has so far (a lower bound, not an MTTF)."""
    buckets = sorted({m["bucket_gpus"] for c in data for m in _measured(c)})
    rows = []
    for b in buckets:
        cells = {}
        for c in data:
            m = next((m for m in c.report["mttf"] if m["bucket_gpus"] == b), None)
            if m is None:
                cells[c.name] = _cell(None, "no job")
            elif m["mttf_hours"] is None:
                cells[c.name] = _cell(None, f"no failure in {fmt_num(m['runtime_hours'])} h")
            else:
                cells[c.name] = _cell(m["mttf_hours"], f"{fmt_num(m['mttf_hours'], 1)} h ({fmt_num(m['mttf_ci_low_hours'], 1)}–"
                                                       f"{fmt_num(m['mttf_ci_high_hours'], 1)}), {fmt_num(m['failures'])} failed")
        rows.append(_row(f"mttf:{b}", f"{b:,} GPUs", cells))
    return rows


def _medians(c) -> list[dict]:
    return c.report["charts"]["ettr"]["datasets"]["medians"]  # what the cluster report draws as the dark ticks


def ettr_frame(data: list) -> pl.DataFrame:
    rows = [{"cluster": c.name, **m} for c in data for m in _medians(c)]
    return pl.DataFrame(rows) if rows else pl.DataFrame()


def ettr_rows(data: list) -> list[dict]:
    rows = [_row("runs", f"runs measured ({RUN_MIN_GPUS}+ GPUs, {RUN_MIN_HOURS}+ hours)",
                 {c.name: _cell(c.report["runs"], fmt_num(c.report["runs"])) for c in data}),
            _row("runs_mean_ettr", "their mean ETTR", {c.name: _cell(v, fmt_num(v, 3)) for c in data
                                                        for v in [c.report["runs_mean_ettr"]]}),
            _row("ettr_largest", "median ETTR of the largest runs", {c.name: _cell(
                h["ettr_largest"], f"{fmt_num(h['ettr_largest'], 3)} ({fmt_num(h['largest_runs'])} of {fmt_num(h['largest_min_gpus'])}+ GPUs)"
                if h["largest_runs"] else "none yet") for c in data for h in [c.report["head"]]})]
    for size in sorted({m["size"] for c in data for m in _medians(c)}):
        cells = {c.name: _cell(m["median_ettr"], f"{fmt_num(m['median_ettr'], 3)} ({fmt_num(m['runs'])})")
                 for c in data for m in _medians(c) if m["size"] == size}
        rows.append(_row(f"ettr_median:{size}", f"median ETTR, {size:,}-GPU bucket (runs)", cells))
    return rows


def capacity_frame(data: list) -> pl.DataFrame:
    rows = [{"cluster": c.name, "part": p["name"], "share": p["share"], "order": i,
             "gpu_hours": p["share"] * c.report["capacity"]["gpu_hours"]}
            for c in data if c.report["capacity"] for i, p in enumerate(c.report["capacity"]["parts"])]
    return pl.DataFrame(rows) if rows else pl.DataFrame()


def capacity_rows(data: list) -> list[dict]:
    caps = {c.name: c.report["capacity"] for c in data if c.report["capacity"]}
    rows = [_row("capacity_gpu_hours", "GPU-hours of capacity",
                 {n: _cell(v["gpu_hours"], f"{fmt_num(v['gpu_hours'])} over {fmt_num(v['days'])} days") for n, v in caps.items()})]
    # each cluster's shares as its own report prints them: percent to a tenth, rounded so that they add up
    shown = {n: loss_split(v) for n, v in caps.items()}
    rows += [_row(f"share:{key}", name, {n: _cell(sp["parts"][key], f"{sp['parts'][key]:.1f}%") for n, sp in shown.items()})
             for key, name in CAPACITY_PARTS]
    return rows + [_row("win_back", "reliability can win back", {n: _cell(sp["win_back"], f"{sp['win_back']:.1f}%")
                                                                  for n, sp in shown.items()})]


def second_order_rows(data: list) -> list[dict]:
    """Preemptions made to requeue jobs that infrastructure ended: a cost on top of the failures' own."""
    lost = {c.name: [x for x in c.report["loss"] if x["kind"] == SECOND_ORDER] for c in data}
    hours = {n: sum(x["lost_gpu_hours"] for x in v) for n, v in lost.items()}
    infra = {c.name: c.report["head"]["infra_lost_gpu_hours"] for c in data}
    ratio = {n: hours[n] / infra[n] if infra[n] else None for n in hours}
    caps = {c.name: c.report["capacity"] for c in data if c.report["capacity"]}
    return [_row("second_order_instances", "second-order preemptions",
                 {n: _cell(s, fmt_num(s)) for n, v in lost.items() for s in [sum(x["instances"] for x in v)]}),
            _row("second_order_gpu_hours", "GPU-hours they lost", {n: _cell(v, fmt_num(v, 1)) for n, v in hours.items()}),
            # the capacity split's part, as the cluster's report prints it (reports/headline.py)
            _row("second_order_share", "share of capacity",
                 {n: _cell(sp["parts"]["second_order"], f"{sp['parts']['second_order']:.1f}%")
                  for n, v in caps.items() for sp in [loss_split(v)]}),
            _row("second_order_per_infra", "per GPU-hour the failures themselves lost",
                 {n: _cell(v, fmt_num(v, 2) if v is not None else "no infrastructure loss") for n, v in ratio.items()})]


def straggler_rows(data: list) -> list[dict]:
    """Each cluster's stragglers (its report's Stragglers section): episodes and nodes, the GPU-hours its jobs
    lost waiting, and that cost by verdict (node, job, undetermined). A cluster with no step times has "—"."""
    st = {c.name: c.report.get("stragglers") for c in data if c.report.get("stragglers")}
    if not st:
        return []
    rows = [_row("stragglers_episodes", "straggler episodes (nodes)",
                 {n: _cell(v["episodes"], f"{fmt_num(v['episodes'])} ({fmt_num(v['hosts'])})") for n, v in st.items()}),
            _row("stragglers_gpu_hours", "GPU-hours lost waiting for stragglers",
                 {n: _cell(v["gpu_hours"], fmt_num(v["gpu_hours"], 1)) for n, v in st.items()})]
    for origin, label in (("node", "of which the node's"), ("job", "of which the job's"),
                          ("undetermined", "of which undetermined")):
        cells = {}
        for n, v in st.items():
            hours = sum(o["gpu_hours"] for o in v["by_origin"] if o["origin"] == origin)
            cells[n] = _cell(hours, fmt_num(hours, 1))
        rows.append(_row(f"stragglers_gpu_hours:{origin}", label, cells))
    return rows


def node_rows(data: list) -> list[dict]:
    modelled = [c for c in data if c.models]
    count = lambda key, label: _row(key, label, {c.name: _cell(v, fmt_num(v)) for c in modelled  # noqa: E731
                                                 for v in [c.models["counts"].get(key, 0)]})
    return [_row("lemons", "lemons (of the nodes scored)", {c.name: _cell(c.lemons["lemons"], f"{fmt_num(c.lemons['lemons'])} "
                                                           f"of {fmt_num(c.lemons['scored'])}") for c in modelled}),
            count("drain_now", "blocklist: drain now"), count("drain_after_job", "blocklist: drain after the job"),
            count("watch", "watch"),
            _row("left_alone", "of those to drain, already drained, down or cordoned",
                 {c.name: _slurm_state(c, c.models["left_alone"]) for c in modelled}),
            _row("nodes_out_of_service", "drained, down or cordoned at the end of the report's day",
                 {c.name: _slurm_state(c, c.report["head"]["nodes_out_of_service"]) for c in data})]


def _slurm_state(c, value) -> dict:
    """A count of nodes by their scheduler state: 0 would be a guess where no node state was read (neither Slurm's
    node events nor Kubernetes' Node Events)."""
    return _cell(value, fmt_num(value)) if c.node_states_known else _cell(None, "no node states read")


def _window_cell(w) -> dict:
    return _cell(w.rate, f"{fmt_num(w.rate, 2)} ({fmt_num(w.failures)} in {fmt_num(w.node_days)} node-days)")


def _verdict_cell(t: dict) -> dict:
    if t["judged"]:
        return _cell(t["verdict"], t["verdict"])
    return _cell(None, "not judged: no failure yet" if t["no_failure"] else f"not judged: {t['days']} of {t['needed']} days")


def trend_rows(data: list) -> list[dict]:
    judged = [c for c in data if c.trend["judged"]]
    return [_row("recent", f"last {WINDOW_DAYS} days: failures per 1,000 node-days",
                 {c.name: _window_cell(c.trend["recent"]) for c in judged}),
            _row("before", f"the {WINDOW_DAYS} days before", {c.name: _window_cell(c.trend["before"]) for c in judged}),
            _row("verdict", "verdict", {c.name: _verdict_cell(c.trend) for c in data})]


def top_nodes(data: list) -> list[dict]:
    """Each cluster's costliest nodes (its report's first rows) ranked together, each named with its cluster: host
    names repeat across clusters."""
    rows = [{"cluster": c.name, **n} for c in data for n in c.report["top_nodes"][:TOP_NODES]]
    return sorted(rows, key=lambda n: (-n["lost_gpu_hours"], -n["incidents"], n["cluster"], n["host"]))


def notes(clusters: list) -> dict[str, list[str]]:
    """Per section, the clusters it cannot show and why (a section with too little data says so in words)."""
    data = [c for c in clusters if c.report is not None]
    out = {"all": [f"{c.name}: no job has ended in its warehouse yet, so it is in no comparison"
                   for c in clusters if c.report is None],
           "rates": [f"{c.name}: no infrastructure failure attributed yet" for c in data if not c.by_cause.height],
           "mttf": [f"{c.name}: no job size has had an infrastructure failure yet, so no time to failure is measured"
                    for c in data if not _measured(c)],
           "ettr": [f"{c.name}: no run of {RUN_MIN_GPUS}+ GPUs scheduled {RUN_MIN_HOURS} hours or more has ended yet"
                    for c in data if not c.report["runs"]],
           "capacity": [f"{c.name}: no capacity measured yet" for c in data if not c.report["capacity"]],
           "nodes": [f"{c.name}: the node models have not run on its warehouse yet" for c in data if not c.models]
           + [f"{c.name}: no node states read (Slurm's slurm_events/, or Kubernetes Events about Nodes in "
              "kubernetes/), so its drained, down or cordoned nodes are not known"
              for c in data if not c.node_states_known],
           "interruptions": [f"{c.name}: no node incident or planned outage recorded yet" for c in data
                             if not c.report.get("interruptions")]}
    return out
