"""`goodput why HOST`: one node's history in the words its records use: availability, times out of service
with the operator's reason, incidents, floods collapsed into episodes, what goodput says to do with it, and its
lifecycle (drained, repaired, validated, resumed, escalated: analysis/nodes/lifecycle.py)."""
from __future__ import annotations

import json
from dataclasses import dataclass

import duckdb
import polars as pl

from analysis import sql
from analysis.commands.explain import _cut, _t, _where

ROWS = 15  # of each kind, latest first


@dataclass
class NodeHistory:
    host: str
    summary: dict | None
    action: dict | None
    offender: dict | None
    outages: pl.DataFrame
    incidents: pl.DataFrame
    episodes: pl.DataFrame
    lifecycle: pl.DataFrame | None = None  # None: the models have not run on this warehouse


def known_host(con: duckdb.DuckDBPyConnection, host: str) -> bool:
    return bool(sql.scalar(con, "report/why_node_known", {"host": host}))


def explain_node(con: duckdb.DuckDBPyConnection, host: str, n: int = ROWS) -> NodeHistory:
    p = {"host": host}

    def one(name: str, table: str) -> dict | None:
        if not sql.table_exists(con, table):
            return None  # the step that writes it has not run on this warehouse
        rows = sql.query(con, name, p)
        return rows.row(0, named=True) if rows.height else None

    return NodeHistory(host, one("report/why_node_summary", "node_availability"),
                       one("report/why_node_action", "node_actions"), one("report/why_node_offender", "repeat_offenders"),
                       sql.query(con, "report/why_node_outages", {**p, "n": n}),
                       sql.query(con, "report/why_node_incidents", {**p, "n": n}),
                       sql.query(con, "report/why_node_episodes", {**p, "n": n}),
                       sql.query(con, "report/why_node_lifecycle", {**p, "limit": n})
                       if sql.table_exists(con, "node_lifecycle") else None)


def _hours(h) -> str:
    return "-" if h is None else f"{h:,.1f} h"


def render(h: NodeHistory) -> str:
    lines = [f"node {h.host}: times in UTC"]
    s = h.summary
    if s:
        lines.append(f"  {s['first_day']} to {s['last_day']}: available {s['availability']:.1%}, {s['outages']} unplanned"
                     f" outage(s) ({_hours(s['hours_out'])} out), {s['planned_outages']} planned"
                     f" ({_hours(s['planned_hours_out'])}); MTBF {_hours(s['mtbf_hours'])}, MTTR {_hours(s['mttr_hours'])}"
                     + ("; out of service now" if s["out_now"] else ""))
    if h.action:
        a = h.action
        lines.append(f"  goodput says: {a['action']} (action score {a['score']:.2f}): {_cut(a['reason'], 300)}")
    if h.offender:
        lines.append(f"  repeat offender as of {_t(h.offender['as_of'])}: {h.offender['reason']}")
    lines.append(f"\n  out of service (latest {ROWS}): {h.outages.height}")
    for o in h.outages.iter_rows(named=True):
        until = "still out" if o["still_out"] else _t(o["time_end"])
        lines.append(f"    {_t(o['time_start'])} -> {until}  {_hours(o['hours']):>10}  {o['state'] or '':10} "
                     f"{_cut(o['label'] or o['cause'], 30):30}{' (planned)' if o['planned'] else ''}"
                     f"  reason: {_cut(o['reason'] or '-', 90)}" + (f"  ticket {o['ticket_id']}" if o["ticket_id"] else ""))
    lines.append(f"\n  incidents (latest {ROWS}): {h.incidents.height}")
    for i in h.incidents.iter_rows(named=True):
        said = []
        if i["from_operator"]:
            said.append("from the operator's record")
        if i["drain_reason"]:
            said.append(f"drained: {_cut(i['drain_reason'], 70)}")
        if i["ticket_id"]:
            said.append(f"ticket {i['ticket_id']}: {_cut(' '.join(x for x in (i['ticket_component'], i['ticket_resolution']) if x), 60)}")
        lines.append(f"    {_t(i['first_event'])}  {_cut(i['label'] or i['cause'], 30):30} {i['severity']:8} "
                     f"{_cut(i['rule'], 32):32} {i['events']:>7,} event(s)  {'; '.join(said)}")
    lines.append(f"\n  what was logged, repeats as one episode (latest {ROWS}): {h.episodes.height}")
    for e in h.episodes.iter_rows(named=True):
        what = " ".join(str(x) for x in (e["source"], e["kind"], e["code"], e["device"]) if x)
        lines.append(f"    {_t(e['first_time'])} -> {_t(e['last_time'])}  x{e['events']:<9,} {_cut(what, 36):36} "
                     f"{_cut(e['label'] or e['cause'], 26):26} {_cut(_where(e), 28):28} {_cut(e['message'], 90)}")
    if h.lifecycle is not None:
        lines.append(f"\n  lifecycle (latest {ROWS} steps): {h.lifecycle.height}")
        for r in h.lifecycle.iter_rows(named=True):
            lines.append(f"    {_t(r['step_time'])}  {r['state']:19} {_cut(r['evidence'], 150)}")
    return "\n".join(lines)


def as_json(h: NodeHistory) -> str:
    def one(d: dict | None) -> dict | None:
        return None if d is None else {k: (v.isoformat() if hasattr(v, "isoformat") else v) for k, v in d.items()}

    def rows(frame: pl.DataFrame) -> list[dict]:
        return [one(r) for r in frame.iter_rows(named=True)]

    return json.dumps({"host": h.host, "times": "UTC", "summary": one(h.summary), "action": one(h.action),
                       "repeat_offender": one(h.offender), "outages": rows(h.outages), "incidents": rows(h.incidents),
                       "episodes": rows(h.episodes),
                       "lifecycle": rows(h.lifecycle) if h.lifecycle is not None else None}, indent=2, default=str)
