"""goodput on a real public fault trace, as a new user would run it.

    .venv/bin/python bench/real_trace.py --trace /tmp/infinitehbd/fault_trace.json [--work /tmp/goodput-real-trace]
                                         [--results bench/results-real-trace.txt]

The trace: stepfun-ai/InfiniteHBD-Trace (SIGCOMM 2025), `fault_trace.json`: 400 GPU servers, 584 node faults over
348 days from 2024-03-30, 231 distinct servers. Each event is {node_id (UUID), event_time (days after the first
day), event_type fault_start|fault_end, fault_type {Level, Class, Desc}}. The repository has no licence file: the
trace is read from where you put it (keep it under /tmp) and none of it is copied into this repository; the
results file holds only counts, causes, hours and the 8-hex node names goodput itself prints.

What is built under WORK/source, as a Slurm site keeps such records:
  slurm_events/events.txt  `sacctmgr show event -P format=NodeName,TimeStart,TimeEnd,State,Reason,User`: one row per
                           fault_start/fault_end pair of a node (FIFO per node and fault type), State DOWN,
                           Reason = the fault's Desc; where the Desc names no part (GENERIC below) the Class is put
                           in front as a site writes it ("Fan: Redundancy Lost"); a fault with no end: `Unknown`.
                           Node names node-<first 8 hex of the UUID>; time = 2024-03-30T00:00:00 + event_time days.
  slurm/sacct.txt          5 COMPLETED single-node jobs on 2024-03-30 on nodes of the trace (the header and
                           format of samples/demo_source/slurm/).
  no topology/             the trace names only the servers that failed, not the 400 nor their cabling.
Then `goodput run --source WORK/source --db WORK/w.duckdb --out WORK/out -q` in a child process (wall seconds,
CPU seconds of the children from resource.getrusage, their peak RSS), and the figures, read from the warehouse
(read-only) and computed independently from the JSON:
  (a) reasons and events classified (operator_reasons.rule not null) vs unclassified_reasons, by the trace's Level
  (b) per trace Class/Desc: the reason text written and the cause goodput gave it
  (c) the report's date vs the trace's last event
  (d) the nodes with the most Hardware-Failure faults: node_actions and repeat_offenders rows
  (e) availability_by_cause vs outages and mean repair hours per Class from the JSON
  (f) `goodput why <worst node>` (first 30 lines)
"""
from __future__ import annotations

import argparse
import collections
import json
import os
import platform
import resource
import shlex
import subprocess
import sys
import time
from datetime import datetime, timedelta, timezone
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
T0 = datetime(2024, 3, 30)
# Descs that name no part: the Class goes in front, as an operator would write it.
GENERIC = {"Unknown Error", "Redundancy Lost", "Low", "Configuration Error", "Bus Correctable error",
           "Temporarily Offline"}
SACCT_SAMPLE = REPO / "samples" / "demo_source" / "slurm" / "sacct-2024-03-01.txt"


def stamp(days: float) -> datetime:
    return T0 + timedelta(seconds=round(days * 86400))


def reason_text(ft: dict) -> str:
    desc, cls = ft["Desc"], ft["Class"]
    if desc in GENERIC and cls != desc:
        return f"{cls}: {desc}"
    return desc


def host(node_id: str) -> str:
    return "node-" + node_id.replace("-", "")[:8]


def load_faults(trace: Path) -> tuple[list[dict], list[dict]]:
    """(events as in the file, faults): a fault = one fault_start paired FIFO with the next fault_end of the same
    node and fault type; end None when none follows."""
    events = json.loads(trace.read_text())
    open_: dict[tuple, collections.deque] = collections.defaultdict(collections.deque)
    faults = []
    for e in events:
        key = (e["node_id"], json.dumps(e["fault_type"], sort_keys=True))
        if e["event_type"] == "fault_start":
            f = {"node_id": e["node_id"], "host": host(e["node_id"]), "start": e["event_time"], "end": None,
                 **e["fault_type"], "reason": reason_text(e["fault_type"])}
            faults.append(f)
            open_[key].append(f)
        elif e["event_type"] == "fault_end":
            if not open_[key]:
                raise SystemExit(f"fault_end with no open fault_start: {e}")
            open_[key].popleft()["end"] = e["event_time"]
        else:
            raise SystemExit(f"unknown event_type: {e}")
    return events, faults


def write_source(src: Path, faults: list[dict]) -> dict:
    (src / "slurm_events").mkdir(parents=True, exist_ok=True)
    (src / "slurm").mkdir(parents=True, exist_ok=True)
    rows = sorted(faults, key=lambda f: (f["start"], f["host"]))
    with (src / "slurm_events" / "events.txt").open("w") as fh:
        fh.write("NodeName|TimeStart|TimeEnd|State|Reason|User\n")
        for f in rows:
            end = "Unknown" if f["end"] is None else f"{stamp(f['end']):%Y-%m-%dT%H:%M:%S}"
            fh.write(f"{f['host']}|{stamp(f['start']):%Y-%m-%dT%H:%M:%S}|{end}|DOWN|{f['reason']}|root(0)\n")
    header = SACCT_SAMPLE.read_text().splitlines()[0]
    hosts = sorted({f["host"] for f in faults})[:5]
    lines = [header]
    for j, h in enumerate(hosts):
        s = T0 + timedelta(hours=1 + 2 * j)
        e = s + timedelta(hours=1, minutes=30)
        t = lambda d: f"{d:%Y-%m-%dT%H:%M:%S}"  # noqa: E731
        lines.append(f"{5001 + j}|{5001 + j}|train|alice|llm|gpu|high|1000|COMPLETED|0:0|None|{t(s)}|{t(s)}|{t(s)}|"
                     f"{t(e)}|01:30:00|1|billing=64,cpu=64,gres/gpu=8,mem=500G,node=1|{h}|0|sbatch train.sh")
    (src / "slurm" / "sacct.txt").write_text("\n".join(lines) + "\n")
    return {"rows": len(rows), "jobs": len(hosts), "job_hosts": hosts}


def run_timed(cmd: list[str]) -> dict:
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t = time.perf_counter()
    proc = subprocess.run(cmd, capture_output=True, text=True, cwd=REPO)
    wall = time.perf_counter() - t
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return {"rc": proc.returncode, "wall_s": wall,
            "cpu_s": (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime),
            "peak_rss_mb": after.ru_maxrss / 1024, "stdout": proc.stdout, "stderr": proc.stderr}


def table(rows: list[tuple], header: list[str]) -> str:
    cells = [[("" if v is None else (f"{v:.2f}" if isinstance(v, float) else str(v))) for v in r] for r in rows]
    w = [max([len(h)] + [len(r[i]) for r in cells]) for i, h in enumerate(header)]
    out = ["  ".join(h.ljust(w[i]) for i, h in enumerate(header)), "  ".join("-" * x for x in w)]
    out += ["  ".join(c.ljust(w[i]) for i, c in enumerate(r)) for r in cells]
    return "\n".join(out)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--trace", type=Path, default=Path("/tmp/infinitehbd/fault_trace.json"),
                    help="the trace's fault_trace.json (keep it under /tmp: the repository has no licence)")
    ap.add_argument("--work", type=Path, default=Path("/tmp/goodput-real-trace"),
                    help="work directory: source/, w.duckdb, out/ [default: /tmp/goodput-real-trace]")
    ap.add_argument("--results", type=Path, default=REPO / "bench" / "results-real-trace.txt")
    ap.add_argument("--goodput", default=str(REPO / ".venv" / "bin" / "goodput"))
    args = ap.parse_args()

    import duckdb

    events, faults = load_faults(args.trace)
    out_lines: list[str] = []
    say = out_lines.append

    work = args.work
    if work.exists():
        import shutil
        shutil.rmtree(work)
    src, db, out = work / "source", work / "w.duckdb", work / "out"
    info = write_source(src, faults)
    nodes = {f["node_id"] for f in faults}
    open_faults = sum(f["end"] is None for f in faults)
    last_day = max(e["event_time"] for e in events)
    last_event = stamp(last_day)

    cmd = [args.goodput, "run", "--source", str(src), "--db", str(db), "--out", str(out), "-q"]
    r = run_timed(cmd)

    say("goodput on a real public fault trace: stepfun-ai/InfiniteHBD-Trace fault_trace.json (SIGCOMM 2025)")
    say(f"date: {datetime.now(timezone.utc):%Y-%m-%d %H:%M UTC}; machine: {os.cpu_count()} cores (shared with "
        f"other sessions), {platform.platform()}, Python {platform.python_version()}, duckdb {duckdb.__version__}")
    say(f"command: {shlex.join([sys.executable, 'bench/real_trace.py', '--trace', str(args.trace), '--work', str(work)])}")
    say(f"goodput: {shlex.join(cmd)}")
    say("")
    say(f"trace: {len(events)} events, {len(faults)} faults ({open_faults} with no end), {len(nodes)} nodes; "
        f"first event day {min(e['event_time'] for e in events)}, last day {last_day} = {last_event:%Y-%m-%dT%H:%M:%S}")
    say(f"source written: slurm_events/events.txt {info['rows']} rows (State DOWN, User root(0)); slurm/sacct.txt "
        f"{info['jobs']} COMPLETED 1-node jobs on 2024-03-30 ({', '.join(info['job_hosts'])}); "
        "no topology/: the trace names only the faulty servers (231 of 400), no cabling")
    say(f"generic Descs given their Class in front: {sorted(GENERIC)}")
    say("")
    say(f"goodput run: exit {r['rc']}, wall {r['wall_s']:.1f} s, CPU {r['cpu_s']:.1f} s (children), "
        f"peak RSS {r['peak_rss_mb']:.0f} MB")
    say("--- goodput run output (stdout) ---")
    say(r["stdout"].rstrip())
    if r["stderr"].strip():
        say("--- stderr ---")
        say(r["stderr"].rstrip()[-4000:])
    say("")
    if not db.exists():
        args.results.write_text("\n".join(out_lines) + "\n")
        print("\n".join(out_lines))
        return 1

    con = duckdb.connect(str(db), read_only=True)
    q = lambda sql, *p: con.execute(sql, list(p)).fetchall()  # noqa: E731

    # (a) classification by Level -------------------------------------------------------------------------
    opr = {t: (rule, cause, ev) for t, rule, cause, ev in
           q("SELECT text, rule, cause, events FROM operator_reasons WHERE source = 'slurm'")}
    uncl = {t for (t,) in q("SELECT text FROM unclassified_reasons")}
    say("(a) operator reasons classified (operator_reasons.rule not null) vs listed in unclassified_reasons")
    by_level: dict[str, dict[str, collections.Counter]] = collections.defaultdict(
        lambda: {"cls": collections.Counter(), "uncl": collections.Counter(), "missing": collections.Counter()})
    for f in faults:
        t = f["reason"]
        k = "missing" if t not in opr else ("cls" if opr[t][0] is not None else "uncl")
        by_level[f["Level"]][k][t] += 1
    rows = []
    for lv, d in sorted(by_level.items()):
        rows.append((lv, len(d["cls"]), sum(d["cls"].values()), len(d["uncl"]), sum(d["uncl"].values()),
                     len(d["missing"]), sum(d["missing"].values())))
    allc = {t for f in faults for t in [f["reason"]] if t in opr and opr[t][0] is not None}
    allu = {f["reason"] for f in faults if f["reason"] in opr and opr[f["reason"]][0] is None}
    rows.append(("all (distinct texts)", len(allc), sum(1 for f in faults if f["reason"] in allc), len(allu),
                 sum(1 for f in faults if f["reason"] in allu), 0, 0))
    say(table(rows, ["Level", "classified texts", "events", "unclassified texts", "events", "not in table", "events"]))
    say(f"operator_reasons rows (slurm): {len(opr)}; unclassified_reasons rows: {len(uncl)}: {sorted(uncl)}")
    mism = [t for t in opr if (opr[t][0] is None) != (t in uncl)]
    if mism:
        say(f"!! rule IS NULL and unclassified_reasons disagree on: {mism}")
    ev_mism = [(t, opr[t][2], n) for t, n in collections.Counter(f["reason"] for f in faults).items()
               if t in opr and opr[t][2] != n]
    if ev_mism:
        say(f"!! operator_reasons.events differs from the trace's fault count for: {ev_mism}")
    say("")

    # (b) Class/Desc -> cause -------------------------------------------------------------------------------
    say("(b) trace Level / Class / Desc -> reason text written -> goodput rule and cause (faults)")
    cnt = collections.Counter((f["Level"], f["Class"], f["Desc"], f["reason"]) for f in faults)
    rows = []
    for (lv, cl, de, t), n in sorted(cnt.items(), key=lambda kv: (kv[0][0], kv[0][1], -kv[1])):
        rule, cause, _ = opr.get(t, ("(absent)", "(absent)", None))
        rows.append((lv.split()[0], cl, de if t == de else f"{de}  [written: {t}]", rule or "UNCLASSIFIED",
                     cause, n))
    say(table(rows, ["Level", "Class", "Desc", "rule", "cause", "faults"]))
    say("")

    # (c) report date ---------------------------------------------------------------------------------------
    reports = sorted((out / "reports").glob("reliability-*.html"))
    say("(c) report file(s): " + (", ".join(p.name for p in reports) or "NONE"))
    say(f"    trace's last event: {last_event:%Y-%m-%d %H:%M:%S} (day {last_day}); "
        f"source_spans: {q('SELECT source, first_time, last_time FROM source_spans ORDER BY source')}")
    say("")

    # (d) worst hardware nodes --------------------------------------------------------------------------------
    hw = collections.Counter(f["host"] for f in faults if f["Level"] == "Hardware Failure")
    top = hw.most_common(6)
    say("(d) nodes with the most Hardware-Failure faults in the trace, and goodput's node_actions / repeat_offenders")
    for h, n in top:
        descs = collections.Counter(f["Desc"] for f in faults if f["host"] == h and f["Level"] == "Hardware Failure")
        other = sum(1 for f in faults if f["host"] == h and f["Level"] != "Hardware Failure")
        as_of = datetime.combine(last_event.date() + timedelta(days=1), datetime.min.time())
        recent = sum(1 for f in faults if f["host"] == h and f["Level"] == "Hardware Failure"
                     and stamp(f["start"]) >= as_of - timedelta(days=180))
        say(f"  {h}: {n} hardware faults ({', '.join(f'{d} x{c}' for d, c in descs.most_common())}); "
            f"{other} other/software; {recent} hardware faults in the 180 days before {as_of:%Y-%m-%d}")
        for a in q("SELECT action, reason, cause, suggested_component, as_of FROM node_actions WHERE host = ?", h):
            say(f"      node_actions: action={a[0]} cause={a[2]} component={a[3]} as_of={a[4]}\n"
                f"                    reason={a[1]}")
        if not q("SELECT 1 FROM node_actions WHERE host = ?", h):
            say("      node_actions: (none)")
        ro = q("SELECT as_of, incidents, threshold, causes, escalation, hours_out FROM repeat_offenders "
               "WHERE host = ? ORDER BY as_of DESC LIMIT 3", h)
        for x in ro:
            say(f"      repeat_offenders: as_of={x[0]} incidents={x[1]} threshold={x[2]} causes={x[3]} "
                f"escalation={x[4]} hours_out={x[5]}")
        if not ro:
            say("      repeat_offenders: (none)")
    say("  all node_actions: " + str(q("SELECT action, count(*) FROM node_actions GROUP BY 1 ORDER BY 1")))
    say("  all repeat_offenders (latest as_of): " + str(q(
        "SELECT host, incidents, threshold, escalation FROM repeat_offenders "
        "WHERE as_of = (SELECT max(as_of) FROM repeat_offenders) ORDER BY incidents DESC")))
    inc = q("SELECT host, count(*), count(*) FILTER (WHERE severity = 'critical') FROM node_incidents "
            "WHERE host IN (SELECT unnest(?)) GROUP BY 1 ORDER BY 2 DESC", [h for h, _ in top])
    say(f"  node_incidents (all, critical) for those nodes: {inc}")
    say("")

    # (e) availability by cause vs JSON ---------------------------------------------------------------------
    say("(e) availability_by_cause (goodput)")
    abc = q("SELECT cause, planned, outages, nodes, node_hours_out, mttr_hours, per_1000_node_days "
            "FROM availability_by_cause ORDER BY node_hours_out DESC")
    say(table(abc, ["cause", "planned", "outages", "nodes", "node_hours_out", "mttr_hours", "per_1000_node_days"]))
    span_h = (last_event - stamp(min(e["event_time"] for e in events))).total_seconds() / 3600
    say(f"    node_availability: {q('SELECT count(*), sum(hours_out), sum(planned_hours_out), min(hours_observed), max(hours_observed) FROM node_availability')}"
        f" (hosts, hours_out, planned_hours_out, hours_observed min/max); trace span {span_h:.1f} h")
    say("")
    say("    side by side per trace Class: the JSON (faults, mean repair h = end - start) | goodput's node_outages whose "
        "first period is a fault of that Class (outages, mean hours, the causes given)")
    fault_at = {(f["host"], stamp(f["start"])): f for f in faults}
    gout = collections.defaultdict(list)
    unmatched = 0
    for h, ts, hours, cause, periods in q("SELECT host, time_start, hours, cause, periods FROM node_outages"):
        f = fault_at.get((h, ts))
        if f is None:
            unmatched += 1
            continue
        gout[(f["Level"].split()[0], f["Class"])].append((hours, cause))
    per_cls: dict[tuple, list[float]] = collections.defaultdict(list)
    for f in faults:
        per_cls[(f["Level"].split()[0], f["Class"])].append(
            ((f["end"] if f["end"] is not None else last_day) - f["start"]) * 24)
    rows = []
    for k in sorted(per_cls, key=lambda k: -sum(per_cls[k])):
        v, g = per_cls[k], gout.get(k, [])
        causes = collections.Counter(c for _, c in g)
        rows.append((k[0], k[1], len(v), sum(v) / len(v), len(g), (sum(h for h, _ in g) / len(g)) if g else None,
                     ", ".join(f"{c} {n}" for c, n in causes.most_common())))
    say(table(rows, ["Level", "Class", "json_faults", "json_mean_h", "goodput_outages", "goodput_mean_h",
                     "goodput causes"]))
    zero = sum(1 for f in faults if f["end"] is not None and stamp(f["end"]) == stamp(f["start"]))
    say(f"    faults {len(faults)}; goodput outages {sum(len(v) for v in gout.values())} (+{unmatched} not starting at a "
        f"fault); zero-length faults (start == end to the second): {zero}")
    say("")
    say("    side by side per cause: goodput availability_by_cause | the JSON's faults grouped by the cause goodput "
        "gave their reason text (operator_reasons; unclassified texts as 'unattributed')")
    by_cause: dict[str, list[float]] = collections.defaultdict(list)
    for f in faults:
        c = opr.get(f["reason"], (None, None, None))[1] or "unattributed"
        by_cause[c].append(((f["end"] if f["end"] is not None else last_day) - f["start"]) * 24)
    gab = {c: (o, h, m, r) for c, _, o, _, h, m, r in abc}
    rows = []
    for c in sorted(set(gab) | set(by_cause), key=lambda c: -(gab.get(c, (0, 0))[1] or 0)):
        o, h, m, r = gab.get(c, (0, 0.0, None, None))
        v = by_cause.get(c, [])
        rows.append((c, o, len(v), h, sum(v), m, (sum(v) / len(v)) if v else None))
    say(table(rows, ["cause", "goodput_outages", "json_faults", "goodput_node_h", "json_h", "goodput_mttr_h",
                     "json_mean_h"]))
    days = (last_event - stamp(0)).total_seconds() / 86400
    n_goodput = q("SELECT count(*) FROM node_availability")[0][0]
    tot_out = sum(x[2] for x in abc)
    say(f"    per 1,000 node-days, all causes: goodput {sum(x[6] for x in abc):.2f} ({tot_out} outages over the "
        f"{n_goodput} nodes the data name); with the trace's 400 servers over {days:.1f} days: "
        f"{1000 * tot_out / (400 * days):.2f} (x{n_goodput / 400:.3f})")
    say("")

    # checks: the problems this trace shows -------------------------------------------------------------------
    say("(checks)")
    z = q("""SELECT count(*), count(*) FILTER (WHERE o.cause = 'unattributed'),
                    list(DISTINCT o.reason) FROM node_outages o JOIN operator_reasons r ON r.text = o.reason
             WHERE r.rule IS NOT NULL AND o.reason_rule IS NULL""")[0]
    say(f"  outages whose reason text IS classified but node_outages.reason_rule is NULL: {z[0]} "
        f"({z[1]} of them cause 'unattributed'): {z[2]}")
    say("    e.g. " + str(q("""SELECT host, time_start, time_end, hours, reason, reason_rule, cause, incident_id
                              FROM node_outages WHERE hours = 0 ORDER BY host LIMIT 2""")))
    lost = q("""WITH g AS (SELECT * FROM classified_events WHERE source = 'slurm' AND severity IN ('critical', 'warning')
                           AND domain <> 'user' AND NOT distributed)
                SELECT g.cause, count(*) FROM g WHERE NOT EXISTS (
                    SELECT 1 FROM node_incidents i WHERE i.host = g.host
                      AND g.event_time BETWEEN i.first_event AND i.last_event)
                GROUP BY 1 ORDER BY 2 DESC""")
    say(f"  classified Slurm DOWN records in no node_incidents row: {sum(n for _, n in lost)} by cause {lost}")
    say("    e.g. " + str(q("""SELECT c.host, c.event_time, c.message, c.cause FROM classified_events c
                              WHERE c.host = 'node-343001fc' AND c.source = 'slurm' ORDER BY c.event_time""")[-3:]))
    say("    node_incidents of node-343001fc: " + str(q(
        "SELECT first_event, cause FROM node_incidents WHERE host = 'node-343001fc' ORDER BY first_event")[-2:]))
    inc = dict(q("SELECT cause, count(*) FROM node_incidents GROUP BY 1"))
    say("  node_incidents (the report's 'Interruptions by root cause') vs node_outages ('Node availability') per cause: "
        + ", ".join(f"{c} {inc.get(c, 0)}/{o}" for c, _, o, *_ in abc if inc.get(c, 0) != o))
    say("")

    con.close()
    # (f) goodput why <worst node> ------------------------------------------------------------------------
    worst = top[0][0]
    w = subprocess.run([args.goodput, "why", "--db", str(db), worst], capture_output=True, text=True, cwd=REPO)
    say(f"(f) goodput why {worst} (exit {w.returncode}; first 30 lines of {len(w.stdout.splitlines())})")
    say("\n".join(w.stdout.splitlines()[:30]))
    if w.stderr.strip():
        say("--- stderr ---\n" + w.stderr.strip()[-2000:])
    args.results.write_text("\n".join(out_lines) + "\n")
    print("\n".join(out_lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
