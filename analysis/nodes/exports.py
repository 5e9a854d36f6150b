"""Exports the scheduler and operators act on: node_actions (the escalation
ladder, sql/models/build_node_actions.sql) written as a Slurm hostlist, an scontrol
drain script and a JSON blocklist. goodput writes these files and never runs them.

The two drain actions do different things in drain.sh, as scontrol(1) documents
its node states: drain_after_job sets State=DRAIN (no new job starts on the node,
the running ones run to completion); drain_now sets State=DOWN (Slurm also stops
the jobs running on it). A node Slurm already has drained or down is left alone,
so the reason its operator or health check gave stays (sql/models/export_slurm_out_of_service.sql)."""
from __future__ import annotations

import json
import re
from dataclasses import asdict, dataclass, field
from datetime import datetime, timezone
from pathlib import Path

import duckdb
import polars as pl

from analysis import resources, sql
from analysis.ingest.hosts import compress_hostlist
from analysis.nodes import offenders

SCHEMA = resources.schema("blocklist.schema.json")
DRAIN_ACTIONS = ("drain_now", "drain_after_job")
# what drain.sh sets for each (scontrol update NodeName=... State=...)
SLURM_STATE = {"drain_now": "DOWN", "drain_after_job": "DRAIN"}
# Host names come from logs: only names a shell and scontrol read literally are exported.
SAFE_HOST = re.compile(r"^[A-Za-z0-9._-]+$")
_UNSAFE_REASON = re.compile(r"[^A-Za-z0-9 _.:=,/()+-]")
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")  # a reason from the logs is quoted in a comment line: one line


@dataclass(frozen=True)
class LadderConfig:
    expiry_days: int = 14  # evidence older than this no longer holds a node
    clean_days: int = 7  # back in service and clean this long: off the list
    repeat_min: int = 2  # incidents in the window that mean drain_after_job
    risk_p7: float = 0.5  # 7-day incident probability that means drain_after_job
    max_drain_share: float = 0.10  # a blocking check fails above this share of the fleet ...
    max_drain_floor: int = 5  # ... and above this many nodes (a small cluster may lose 5 nodes at once)
    # a job's blame is known once the attribution window after its end has passed (taxonomy after_min)
    attribution_after_s: int = 300
    # a repeated validation failure, as goodput criteria calls a node defective (analysis/criteria/learn.py):
    benchmark_window_days: int = 56  # validation runs that count ...
    benchmark_min_failed: int = 3  # ... how many must have failed ...
    benchmark_min_share: float = 1 / 3  # ... and what share of the node's runs
    # With no repair ticket either way, a node is back in service after a critical incident
    # (sql/models/build_clean_evidence.sql) when, since its last event and not drained now, at least
    # clean_checks health checks passed and clean_jobs jobs of clean_job_hours or more ran on it
    # and completed; or it rebooted or came back from DRAIN/DOWN and then passed clean_checks
    # checks or completed one such job.
    clean_checks: int = 1
    clean_jobs: int = 3
    clean_job_hours: float = 2.0
    # nodes with repeated hardware incidents in their own history (analysis/nodes/offenders.py)
    offenders: offenders.OffenderConfig = field(default_factory=offenders.OffenderConfig)


def drain_limit(cfg: LadderConfig, fleet: int) -> int:
    """How many nodes the exports may drain before the blocking check fails."""
    return max(cfg.max_drain_floor, int(cfg.max_drain_share * fleet))


def drain_excess(actions: pl.DataFrame | None, fleet: int, cfg: LadderConfig) -> tuple[int, int, str | None]:
    """Nodes to drain, the limit, and what is wrong when they are over it (None:
    within it). The Dagster check and `goodput export` both judge with this."""
    drains = 0 if actions is None else actions.filter(pl.col("action").is_in(DRAIN_ACTIONS)).height
    limit = drain_limit(cfg, fleet)
    problem = None if drains <= limit else (
        f"{drains} of {fleet} nodes would be drained, over the limit of {limit} "
        f"(max_drain_share {cfg.max_drain_share:.0%}, max_drain_floor {cfg.max_drain_floor})")
    return drains, limit, problem


def _safe(frame: pl.DataFrame) -> pl.DataFrame:
    return frame.filter(pl.col("host").str.contains(SAFE_HOST.pattern))


def _safe_drains(actions: pl.DataFrame) -> pl.DataFrame:
    return _safe(actions.filter(pl.col("action").is_in(DRAIN_ACTIONS)))


def _clean_params(as_of: datetime, cfg: LadderConfig) -> dict:
    return {"as_of": as_of, "expiry_days": cfg.expiry_days, "clean_checks": cfg.clean_checks,
            "clean_jobs": cfg.clean_jobs, "clean_job_s": round(cfg.clean_job_hours * 3600)}


def clean_evidence(con: duckdb.DuckDBPyConnection, as_of: datetime, cfg: LadderConfig = LadderConfig()) -> pl.DataFrame:
    """Per critical incident in incidents_as_of (built for ``as_of``): the evidence after it and
    whether it returns the node to service when no ticket decides (TEMP table clean_evidence)."""
    sql.run(con, "models/build_clean_evidence", _clean_params(as_of, cfg))
    return con.sql("SELECT * FROM clean_evidence ORDER BY host, event_time").pl()


def build_node_actions(con: duckdb.DuckDBPyConnection, as_of: datetime, cfg: LadderConfig = LadderConfig()) -> pl.DataFrame:
    clean = _clean_params(as_of, cfg)
    # the models' and the criteria's tables, empty when those steps never ran: the ladder reads them either way
    sql.run_steps(con, [("models/build_incidents_as_of", {"as_of": as_of}), ("models/build_clean_evidence", clean),
                        ("schema/node_risk", None), ("schema/lemon_scores", None), ("schema/benchmark_verdicts", None),
                        ("models/view_node_population", None)])
    # built by the attribution and straggler steps; absent on an older warehouse
    for table in ("node_outages", "taxonomy_causes", "straggler_episodes"):
        if not sql.table_exists(con, table):
            sql.run(con, f"models/stand_in_{table}")
    offenders.build(con, as_of, cfg.offenders, cfg.attribution_after_s)
    sql.run_steps(con, [("models/build_node_actions", {**clean, "clean_days": cfg.clean_days, "repeat_min": cfg.repeat_min,
                                                "risk_p7": cfg.risk_p7, "after_s": cfg.attribution_after_s,
                                                "bench_days": cfg.benchmark_window_days,
                                                "bench_min_failed": cfg.benchmark_min_failed,
                                                "bench_min_share": cfg.benchmark_min_share})])
    return con.sql("SELECT * FROM node_actions ORDER BY action, host").pl()


def _iso(t) -> str:
    return t.replace(tzinfo=timezone.utc).isoformat().replace("+00:00", "Z")


def slurm_out_of_service(con: duckdb.DuckDBPyConnection, as_of: datetime) -> pl.DataFrame:
    """host, state, reason of the nodes Slurm has drained or down as far as the warehouse knows."""
    return sql.query(con, "models/export_slurm_out_of_service", {"as_of": as_of})


def with_slurm(actions: pl.DataFrame, slurm: pl.DataFrame | None) -> pl.DataFrame:
    """actions with slurm_state and slurm_reason (set when Slurm already has the node drained or down) and
    left_alone: a drain that drain.sh leaves to Slurm, so the reason Slurm has stays. The one rule drain.sh,
    blocklist.json and the report's node-action table read."""
    slurm = slurm if slurm is not None else pl.DataFrame(schema={"host": pl.Utf8, "state": pl.Utf8, "reason": pl.Utf8})
    return (actions.join(slurm.select("host", slurm_state="state", slurm_reason="reason"), on="host", how="left")
            .with_columns(left_alone=pl.col("action").is_in(DRAIN_ACTIONS) & pl.col("slurm_state").is_not_null()))


def blocklist_json(actions: pl.DataFrame, as_of: datetime, made_by: str, cfg: LadderConfig,
                   slurm: pl.DataFrame | None = None, cluster: str | None = None) -> dict:
    entries = []
    for r in with_slurm(_safe(actions), slurm).iter_rows(named=True):
        entries.append({
            "host": r["host"], "action": r["action"], "reason": r["reason"] or "", "cause": r["cause"] or "",
            "score": float(min(max(r["score"] or 0.0, 0.0), 1.0)), "since": _iso(r["since"]), "expires": _iso(r["expires"]),
            "suggest_ticket": bool(r["suggest_ticket"]), "suggested_component": r["suggested_component"],
            "evidence": {"event_times": [_iso(t) for t in r["event_times"] or []],
                         "jobs": [str(j) for j in r["jobs"] or []], "tickets": [str(t) for t in r["tickets"] or []],
                         "benchmarks": [str(b) for b in r.get("benchmarks") or []]},
            "slurm_state": r["slurm_state"], "slurm_reason": r["slurm_reason"],
        })
    return {"generated_at": _iso(datetime.now(timezone.utc).replace(tzinfo=None)), "as_of": _iso(as_of),
            "made_by": made_by, "cluster": cluster, "settings": asdict(cfg), "entries": entries}


def drain_reason(action: str, cause: str, score: float) -> str:
    text = f"goodput: {action} {cause} score={score:.2f}"
    return _UNSAFE_REASON.sub("_", text)[:120]


def drain_script(actions: pl.DataFrame, header: str, slurm: pl.DataFrame | None = None,
                 cluster: str | None = None) -> str:
    """scontrol lines, one per action and reason with the hosts as a hostlist, drain_now first; a
    comment line per node Slurm already has drained or down, which the script leaves alone. With the
    warehouse's ``cluster``, each line names it (scontrol(1) --clusters): host names repeat across clusters,
    and a control host that reaches several must not drain another cluster's namesake."""
    scontrol = f"scontrol --clusters={cluster}" if cluster else "scontrol"
    drains = with_slurm(_safe_drains(actions), slurm)
    lines = ["#!/usr/bin/env bash", *[f"# {h}" for h in header.splitlines()],
             "# goodput never runs this file: review it, then run it as a Slurm operator.",
             "# drain_after_job: State=DRAIN: no new job starts on these nodes; the running ones run to completion.",
             "# drain_now: State=DOWN: Slurm also stops the jobs running on them now (scontrol(1): \"Stop all running",
             "# and suspended jobs\"); write State=DRAIN instead to let those jobs finish.",
             "set -euo pipefail", ""]
    left = drains.filter(pl.col("left_alone")).sort("host")
    for r in left.iter_rows(named=True):
        said = _CONTROL.sub(" ", r["slurm_reason"] or "")[:200]
        lines.append(f"# left alone: {r['host']} is already {_CONTROL.sub(' ', r['slurm_state'])} in Slurm"
                     f"{f' (reason: {said})' if said else ''}; goodput would {r['action']} it ({r['cause'] or 'unknown'})")
    grouped = (drains.filter(~pl.col("left_alone"))
               .with_columns(reason=pl.struct("action", "cause", "score").map_elements(
                   lambda s: drain_reason(s["action"], s["cause"] or "unknown", s["score"] or 0.0), return_dtype=pl.Utf8))
               .group_by("action", "reason").agg(pl.col("host"))
               .sort(pl.col("action") != "drain_now", "reason"))
    for action, reason, hosts in grouped.iter_rows():
        lines.append(f'{scontrol} update NodeName={compress_hostlist(hosts)} State={SLURM_STATE[action]} Reason="{reason}"')
    if not grouped.height:
        lines.append("# nothing else to drain" if left.height else "# nothing to drain")
    return "\n".join(lines) + "\n"


def write_exports(actions: pl.DataFrame, out_dir: Path, as_of: datetime, made_by: str,
                  cfg: LadderConfig = LadderConfig(), plan: pl.DataFrame | None = None,
                  slurm: pl.DataFrame | None = None, cluster: str | None = None) -> dict[str, Path]:
    """blocklist.txt, drain.sh, blocklist.json (and validation_plan.json when a
    plan is given) in ``out_dir``; returns their paths. ``slurm``: the nodes Slurm
    already has drained or down (slurm_out_of_service): drain.sh leaves them alone,
    blocklist.json gives their state and reason, blocklist.txt still lists them."""
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    drains = _safe_drains(actions)
    paths = {"blocklist.txt": out_dir / "blocklist.txt", "drain.sh": out_dir / "drain.sh",
             "blocklist.json": out_dir / "blocklist.json"}
    hostlist = compress_hostlist(drains["host"].to_list())
    paths["blocklist.txt"].write_text(hostlist + "\n" if hostlist else "")
    already = int(with_slurm(drains, slurm)["left_alone"].sum())
    header = (f"Made by {made_by}\n" + (f"cluster {cluster}\n" if cluster else "")
              + f"as of {_iso(as_of)}: {drains.height} node(s) to drain"
              + (f", {already} of them already drained or down in Slurm (left alone)" if already else ""))
    paths["drain.sh"].write_text(drain_script(actions, header, slurm, cluster))
    paths["drain.sh"].chmod(0o755)
    paths["blocklist.json"].write_text(json.dumps(blocklist_json(actions, as_of, made_by, cfg, slurm, cluster), indent=2)
                                       + "\n")
    if plan is not None:
        paths["validation_plan.json"] = out_dir / "validation_plan.json"
        paths["validation_plan.json"].write_text(json.dumps(validation_plan_json(plan, as_of, made_by), indent=2) + "\n")
    return paths


def validation_plan_json(plan: pl.DataFrame, as_of: datetime, made_by: str) -> dict:
    """host -> benchmarks in the order to run them, each with the incident
    probability it is expected to remove (Anubis Alg. 1)."""
    nodes = {}
    for r in _safe(plan).sort("host", "step").iter_rows(named=True):
        node = nodes.setdefault(r["host"], {"p_incident_7d": round(r["p_before"], 4) if r["step"] == 1 else None,
                                            "benchmarks": []})
        node["benchmarks"].append({"benchmark": r["benchmark"], "duration_min": r["duration_min"],
                                   "expected_reduction": round(r["reduction"], 4), "p_after": round(r["p_after"], 4)})
    return {"generated_at": _iso(datetime.now(timezone.utc).replace(tzinfo=None)), "as_of": _iso(as_of),
            "made_by": made_by, "nodes": nodes}


def unsafe_hosts(actions: pl.DataFrame) -> list[str]:
    """Hosts left out of the exports because their names are not plain host names."""
    return actions.filter(~pl.col("host").str.contains(SAFE_HOST.pattern))["host"].to_list()


def latest_plan(con: duckdb.DuckDBPyConnection, as_of: datetime) -> pl.DataFrame | None:
    try:
        return con.sql("SELECT * FROM validation_plan WHERE as_of = ? ORDER BY host, step", params=[as_of]).pl()
    except duckdb.CatalogException:
        return None


def latest_actions(con: duckdb.DuckDBPyConnection) -> tuple[pl.DataFrame, datetime]:
    """node_actions as last built, with the as_of they were built for; ValueError when there are none."""
    try:
        actions = con.sql("SELECT * FROM node_actions ORDER BY action, host").pl()
        # the actions carry their as_of; an empty list takes that of the scores built with it
        as_of = actions["as_of"][0] if actions.height else \
            con.execute("SELECT max(as_of) FROM lemon_scores").fetchall()[0][0]
    except duckdb.CatalogException:
        as_of = None
    if as_of is None:
        raise ValueError("no node_actions in the warehouse yet: run `goodput models` (or `goodput run`) first")
    return actions, as_of
