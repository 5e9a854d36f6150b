"""Text rendering of `goodput why`."""
from __future__ import annotations

from datetime import timedelta

from analysis.derive.attribution import InstanceExplanation
from analysis.derive.taxonomy import Taxonomy


def _t(value) -> str:
    return value.strftime("%Y-%m-%d %H:%M:%S") if value is not None else "-"


def _where(e: dict, full: bool = False) -> str:
    """file:line of an event: the log line an operator can open (goodput's own events have no line)."""
    if not e.get("file") or str(e["file"]).startswith("goodput:"):
        return str(e.get("file") or "-")
    return f"{e['file'] if full else str(e['file']).rsplit('/', 1)[-1]}:{e['line_no']}"


def _cut(text, n: int) -> str:
    """At most n characters, an ellipsis where text was cut."""
    text = "" if text is None else str(text)
    return text if len(text) <= n else text[: n - 1] + "…"


def _window(inst: InstanceExplanation, taxonomy: Taxonomy) -> tuple:
    """The attribution window around an instance's end (None, None when it has not ended)."""
    if inst.end_time is None:
        return None, None
    return inst.end_time - timedelta(seconds=taxonomy.before_s), inst.end_time + timedelta(seconds=taxonomy.after_s)


def verdict(inst: InstanceExplanation) -> str:
    """Whether the instance counts as a failure (job_failure_causes.is_failure), and why a requeue does not."""
    if inst.is_failure:
        return "failure"
    if inst.state == "REQUEUED":
        return ("not a failure: requeued while its node was in planned maintenance" if inst.maintenance else
                "not a failure: requeued, and nothing in its window explains it")
    return ""


def render(instances: list[InstanceExplanation], taxonomy: Taxonomy) -> str:
    failures = sum(i.is_failure for i in instances)
    lines = [f"job {instances[0].job_id}: {len(instances)} instance(s), {failures} failure{'' if failures == 1 else 's'},"
             " times in UTC"]
    blamed_before = None
    for inst in instances:
        nodes = ", ".join(inst.nodes[:8]) + (f" ... ({len(inst.nodes)} nodes)" if len(inst.nodes) > 8 else "")
        said = verdict(inst)
        lines.append(f"\ninstance {inst.instance}: {inst.state}{f' ({said})' if said else ''}  {_t(inst.start_time)} -> "
                     f"{_t(inst.end_time)}  on {nodes or '-'}")
        p = inst.primary
        if p is None:
            lines.append("  no attribution (the instance did not fail, or nothing fired in its window)")
        elif p["rule"] == "no-event":
            lines.append(f"  primary cause: {p['cause']} ({p['domain']}): no infrastructure event in the window"
                         f" (rule no-event)")
        else:
            where = (p["host"] or (f"the link {p['link']}" if p.get("link") else "no host (network or configuration)"))
            lines.append(f"  primary cause: {p['cause']} ({p['domain']}) on {where}, rule {p['rule']},"
                         f" {p['severity']} event at {_t(p['event_time'])}")
            if p.get("file"):
                lines.append(f"  deciding line: {_where(p, full=True)}: {_cut(p['message'], 160)}")
            xid = taxonomy.xids.get(int(p["code"])) if p.get("kind") == "xid" and str(p.get("code")).isdigit() else None
            if xid and xid.get("resolution"):
                lines.append(f"  XID {p['code']} ({xid.get('name', '')}): NVIDIA's resolution: {xid['resolution']}")
        if blamed_before and blamed_before in inst.nodes:
            lines.append(f"  note: this instance ran on {blamed_before} again, the node blamed for the instance before")
        blamed_before = p["host"] if p and p.get("host") else None
        if inst.end_time is not None:
            lo, hi = _window(inst, taxonomy)
            lines_seen = int(inst.events["repeats"].sum()) if inst.events.height else 0
            repeated = f" ({lines_seen:,} lines: repeats of one event are one row)" if lines_seen > inst.events.height else ""
            lines.append(f"  events on its nodes in [{_t(lo)}, {_t(hi)}]: {inst.events.height}{repeated}")
        for e in inst.events.head(40).iter_rows(named=True):
            what = " ".join(str(x) for x in (e["source"], e["kind"], e["code"]) if x)
            flood = f"  x{e['repeats']:,} until {_t(e['last_time'])}" if e["repeats"] > 1 else ""
            lines.append(f"    {e['host']}  {_t(e['event_time'])}  {_cut(what, 32):32}  {_cut(e['rule'], 40):40} "
                         f"{_cut(e['cause'], 20):20} {e['severity']:8} {_cut(_where(e), 28):28} {_cut(e['message'], 90)}{flood}")
        if inst.events.height > 40:
            lines.append(f"    ... {inst.events.height - 40} more")
        lines += straggler_lines(inst)
    return "\n".join(lines)


def _span(seconds: float) -> str:
    return f"{seconds / 60:.0f} min" if seconds < 3 * 3600 else f"{seconds / 3600:.1f} h"


def straggler_lines(inst: InstanceExplanation) -> list[str]:
    """'ran 1.6x slower for 41 min after 14:02 because of gpu0123': each straggler episode of the instance."""
    if inst.stragglers is None or not inst.stragglers.height:
        return []
    lost = inst.stragglers["cost_seconds"].sum()
    out = [f"  stragglers: {inst.stragglers.height}, training time lost waiting for them: {_span(lost)}"]
    for s in inst.stragglers.iter_rows(named=True):
        span = (s["end_time"] - s["start_time"]).total_seconds()
        ranks = f" (rank {', '.join(str(r) for r in s['ranks'])})" if s["ranks"] else ""
        out.append(f"    ran {s['slowdown']:.1f}x slower for {_span(span)} after {_t(s['start_time'])} because of "
                   f"{s['host']}{ranks}: {s['kind']}, cost {_span(s['cost_seconds'])}; "
                   f"{s['origin']} ({s['why']}), from {s['source']}")
    return out


def as_json(instances: list[InstanceExplanation], taxonomy: Taxonomy) -> str:
    """`goodput why --json`: the same facts as the text, every time in UTC (ISO 8601)."""
    import json

    def iso(v):
        return v.isoformat() if v is not None else None

    out = {"job_id": instances[0].job_id, "times": "UTC", "failures": sum(i.is_failure for i in instances), "instances": []}
    for inst in instances:
        p = inst.primary
        lo, hi = _window(inst, taxonomy)
        out["instances"].append({
            "instance": inst.instance, "state": inst.state, "failure": inst.is_failure, "maintenance": inst.maintenance,
            "start_time": iso(inst.start_time),
            "end_time": iso(inst.end_time), "nodes": inst.nodes,
            "primary": None if p is None else {**{k: p[k] for k in p if k != "event_time"},
                                               "event_time": iso(p["event_time"])},
            "window": [iso(lo), iso(hi)],
            "events": [{**e, "event_time": iso(e["event_time"]), "last_time": iso(e["last_time"])}
                       for e in inst.events.iter_rows(named=True)],
            "stragglers": [{**r, "start_time": iso(r["start_time"]), "end_time": iso(r["end_time"])}
                           for r in (inst.stragglers.iter_rows(named=True) if inst.stragglers is not None else [])]})
    return json.dumps(out, indent=2, default=str)
