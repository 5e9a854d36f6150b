"""Exports the scheduler and operators act on: node_actions (the escalation
ladder, sql/models/build_node_actions.sql) written as a Slurm hostlist, an scontrol
drain script and a JSON blocklist. goodput writes these files and never runs them.

The two drain actions do different things in drain.sh, as scontrol(1) documents
its node states: drain_after_job sets State=DRAIN (no new job starts on the node,
the running ones run to completion); drain_now sets State=DOWN (Slurm also stops
the jobs running on it). A node Slurm already has drained or down is left alone,
so the reason its operator or health check gave stays (sql/models/export_slurm_out_of_service.sql).

drain.sh (and, for Kubernetes nodes, kubectl.sh) check before they act, every time they are run: the export's
age, each node's live state against the one the export planned against, and the drain cap over what they would
do now (analysis/nodes/scripts.py, docs/node-exports.md)."""
from __future__ import annotations

import json
import os
import re
from dataclasses import asdict, dataclass
from datetime import datetime, timezone
from pathlib import Path

import duckdb
import polars as pl

from analysis import package_files, sql
from analysis.ingest.hosts import compress_hostlist
from analysis.nodes import asof, lifecycle, offenders, scripts
from analysis.nodes.scripts import CONDITION_TYPE, K8S_TAINT_KEY, SLURM_TAG
from analysis.settings import ExportConfig, LadderConfig
from analysis.sources import JOBS_FROM

SCHEMA = package_files.schema("blocklist.schema.json")
DRAIN_ACTIONS = ("drain_now", "drain_after_job")
SLURM_STATE = scripts.SLURM_STATE  # what drain.sh sets for each (scontrol update NodeName=... State=...)
# Host names come from logs: only names a shell and scontrol read literally are exported.
SAFE_HOST = re.compile(r"^[A-Za-z0-9._-]+$")
_UNSAFE_REASON = re.compile(r"[^A-Za-z0-9 _.:=,/()+-]")
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")  # a reason from the logs is quoted in a comment line: one line
_UNSAFE_STATE = re.compile(r"[^A-Za-z0-9_+*]")
PLATFORMS = ("slurm", "kubernetes", "both")
AUTO = "auto"  # the platform of the jobs the warehouse holds (platform_of)


def platform_of(con: duckdb.DuckDBPyConnection) -> str:
    """The nodes' scheduler as the warehouse knows it: kubernetes when its jobs all came from kubernetes/, both
    when from both folders, else slurm (also before any job was read: Slurm is the usual case)."""
    found = set(sql.query(con, "ops/job_sources", {"sources": list(JOBS_FROM)})["source"])
    return "both" if len(found) > 1 else "kubernetes" if found == {"kubernetes"} else "slurm"


def resolve_platform(con: duckdb.DuckDBPyConnection, platform: str = ExportConfig.platform) -> str:
    """``platform`` as set, or the warehouse's own for auto (the writers below take a resolved one)."""
    return platform_of(con) if platform == AUTO else platform


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
    sql.run_steps(con, [*asof.steps(con, as_of), ("models/build_clean_evidence", clean),
                        ("schema/node_risk", None), ("schema/lemon_scores", None), ("schema/benchmark_verdicts", None),
                        ("models/view_node_population", None)])
    # built by the attribution and straggler steps; absent on an older warehouse
    sql.stand_ins(con, "node_outages", "taxonomy_causes", "straggler_episodes")
    offenders.build(con, as_of, cfg.offenders, cfg.attribution_after_s)
    lifecycle.build(con, as_of, cfg.lifecycle)  # the escalations so far: the ladder drains an escalated node now
    latest = sql.scalar(con, "models/latest_action_as_of")
    steps = [("models/build_node_actions", {**clean, "clean_days": cfg.clean_days, "repeat_min": cfg.repeat_min,
                                            "risk_p7": cfg.risk_p7, "after_s": cfg.attribution_after_s,
                                            "bench_days": cfg.benchmark_window_days,
                                            "bench_min_failed": cfg.benchmark_min_failed,
                                            "bench_min_share": cfg.benchmark_min_share}),
             ("models/store_node_action_history", {"as_of": as_of})]
    # an as-of older than the newest decisions (a backtest) is kept in the history, never over the current ones
    if latest is None or as_of >= latest:
        steps.append(("models/store_node_actions", None))
    sql.run_steps(con, steps)
    lifecycle.build(con, as_of, cfg.lifecycle)  # again, with this as-of's decisions in it
    return con.sql("SELECT * FROM staged_node_actions ORDER BY action, host").pl()


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


def reported_score(score: float | None) -> float:
    """node_actions.score as every export shows it (drain.sh's reasons, blocklist.json, node_conditions.json):
    within [0, 1] and rounded to 2 decimals, so the number reads the same everywhere."""
    return round(min(max(float(score or 0.0), 0.0), 1.0), 2)


@dataclass(frozen=True)
class ExportOverride:
    """`goodput export --force` past the drain cap: who (the OS user) and why, in the export's header, in
    blocklist.json and in the warehouse (table export_overrides)."""
    forced_at: datetime  # UTC, naive
    os_user: str
    why: str
    drains: int
    drain_limit: int
    fleet: int
    as_of: datetime
    platform: str
    out_dir: str

    def json(self) -> dict:
        return {"forced_at": _iso(self.forced_at), "user": self.os_user, "why": self.why, "drains": self.drains,
                "drain_limit": self.drain_limit, "fleet": self.fleet}

    def header(self) -> str:
        return (f"FORCED past the drain cap by {self.os_user} at {_iso(self.forced_at)}: {self.drains} of "
                f"{self.fleet} nodes to drain, limit {self.drain_limit}; why: {_CONTROL.sub(' ', self.why)}")


def os_user() -> str:
    """The OS user running goodput (the real uid's name, not $USER)."""
    try:
        import pwd

        return pwd.getpwuid(os.getuid()).pw_name
    except (ImportError, KeyError):
        import getpass

        return getpass.getuser()


def record_override(con: duckdb.DuckDBPyConnection, override: ExportOverride) -> None:
    """One row of export_overrides (sql/schema/export_overrides.sql)."""
    sql.run_steps(con, [("schema/export_overrides", None),
                        ("models/record_export_override", asdict(override))])


def _resume_frame(resume: pl.DataFrame | None, actions: pl.DataFrame) -> pl.DataFrame:
    """The nodes to resume (host, evidence): plain names only, and never a node this export drains."""
    if resume is None or not resume.height:
        return pl.DataFrame(schema={"host": pl.Utf8, "evidence": pl.Utf8})
    drains = set(_safe_drains(actions)["host"])
    return (_safe(resume.select("host", pl.col("evidence").cast(pl.Utf8)))
            .filter(~pl.col("host").is_in(list(drains))).unique("host", keep="first").sort("host"))


def resume_reason(evidence: str | None) -> str:
    text = f"{SLURM_TAG} resume {_CONTROL.sub(' ', evidence or 'repaired and validated')}"
    return _UNSAFE_REASON.sub("_", text)[:120]


def blocklist_json(actions: pl.DataFrame, as_of: datetime, made_by: str, cfg: LadderConfig,
                   slurm: pl.DataFrame | None = None, cluster: str | None = None, *,
                   resume: pl.DataFrame | None = None, fleet: int | None = None,
                   override: ExportOverride | None = None, generated: datetime | None = None,
                   platform: str = "slurm") -> dict:
    entries = []
    for r in with_slurm(_safe(actions), slurm).iter_rows(named=True):
        entries.append({
            "host": r["host"], "action": r["action"], "reason": r["reason"] or "", "cause": r["cause"] or "",
            "score": reported_score(r["score"]), "since": _iso(r["since"]), "expires": _iso(r["expires"]),
            "suggest_ticket": bool(r["suggest_ticket"]), "suggested_component": r["suggested_component"],
            "evidence": {"event_times": [_iso(t) for t in r["event_times"] or []],
                         "jobs": [str(j) for j in r["jobs"] or []], "tickets": [str(t) for t in r["tickets"] or []],
                         "benchmarks": [str(b) for b in r.get("benchmarks") or []]},
            "slurm_state": r["slurm_state"], "slurm_reason": r["slurm_reason"],
        })
    out_of_service = _slurm_states(slurm)
    resumes = [{"host": h, "evidence": e or "", "slurm_state": out_of_service.get(h)}
               for h, e in _resume_frame(resume, actions).iter_rows()]
    generated = generated or _utcnow()
    return {"generated_at": _iso(generated), "as_of": _iso(as_of), "made_by": made_by, "cluster": cluster,
            "platform": platform, "fleet": fleet, "drain_limit": drain_limit(cfg, fleet or 0),
            "override": override.json() if override else None, "settings": asdict(cfg), "entries": entries,
            "resume": resumes}


def drain_reason(action: str, cause: str, score: float) -> str:
    text = f"{SLURM_TAG} {action} {cause} score={reported_score(score):.2f}"
    return _UNSAFE_REASON.sub("_", text)[:120]


def _utcnow() -> datetime:
    return datetime.now(timezone.utc).replace(tzinfo=None, microsecond=0)


def _slurm_states(slurm: pl.DataFrame | None) -> dict[str, str]:
    return {} if slurm is None else dict(slurm.select("host", "state").iter_rows())


def plan_steps(actions: pl.DataFrame, slurm: pl.DataFrame | None = None,
               resume: pl.DataFrame | None = None) -> list[scripts.Step]:
    """What drain.sh and kubectl.sh carry: every drain (drain_now first), with the state Slurm had for the node in
    the warehouse (a node already out was planned as out: the scripts leave it alone), then the resumes."""
    drains = with_slurm(_safe_drains(actions), slurm).sort(pl.col("action") != "drain_now", "host")
    steps = [scripts.Step(r["host"], r["action"], "out" if r["left_alone"] else "in_service",
                          _UNSAFE_STATE.sub("_", r["slurm_state"])[:40] if r["slurm_state"] else "-",
                          drain_reason(r["action"], r["cause"] or "unknown", r["score"]))
             for r in drains.iter_rows(named=True)]
    states = _slurm_states(slurm)
    for host, evidence in _resume_frame(resume, actions).iter_rows():
        state = states.get(host)
        steps.append(scripts.Step(host, "resume", "out", _UNSAFE_STATE.sub("_", state)[:40] if state else "-",
                                  resume_reason(evidence)))
    return steps


def left_alone_notes(actions: pl.DataFrame, slurm: pl.DataFrame | None) -> list[str]:
    """A comment line per node to drain that Slurm already has drained or down in the warehouse."""
    left = with_slurm(_safe_drains(actions), slurm).filter(pl.col("left_alone")).sort("host")
    notes = []
    for r in left.iter_rows(named=True):
        said = _CONTROL.sub(" ", r["slurm_reason"] or "")[:200]
        notes.append(f"left alone: {r['host']} is already {_CONTROL.sub(' ', r['slurm_state'])} in Slurm"
                     f"{f' (reason: {said})' if said else ''}; goodput would {r['action']} it ({r['cause'] or 'unknown'})")
    return notes


def _meta(as_of: datetime, cfg: LadderConfig, fleet: int | None, created: datetime, cluster: str | None,
          max_age_hours: int, no_execute: bool) -> scripts.Meta:
    return scripts.Meta(
        created_at=int(created.replace(tzinfo=timezone.utc).timestamp()), created_iso=_iso(created),
        as_of=_iso(as_of), fleet=fleet or 0, limit=drain_limit(cfg, fleet or 0),
        cap_text=(f"max_drain_share {cfg.max_drain_share:.0%} of {fleet} nodes, max_drain_floor {cfg.max_drain_floor}"
                  if fleet else f"fleet size unknown: max_drain_floor {cfg.max_drain_floor}"),
        max_age_hours=max_age_hours, cluster=cluster, no_execute=no_execute)


def drain_script(actions: pl.DataFrame, header: str, slurm: pl.DataFrame | None = None,
                 cluster: str | None = None, *, resume: pl.DataFrame | None = None, as_of: datetime | None = None,
                 cfg: LadderConfig = LadderConfig(), fleet: int | None = None, created: datetime | None = None,
                 max_age_hours: int = scripts.DEFAULT_MAX_AGE_HOURS, platform: str = "slurm",
                 no_execute: bool = False) -> str:
    """drain.sh (platform slurm) or kubectl.sh (kubernetes): the plan (plan_steps) inside a script that checks
    before it acts, every time it is run (analysis/nodes/scripts.py). A comment line per node Slurm already has
    drained or down in the warehouse. With the warehouse's ``cluster``, every scontrol and sinfo call names it
    (scontrol(1) --clusters): host names repeat across clusters, and a control host that reaches several must
    not drain another cluster's namesake."""
    created = created or _utcnow()
    steps = plan_steps(actions, slurm, resume)
    lines = [*header.splitlines(), *left_alone_notes(actions, slurm)]
    if not steps:
        lines.append("nothing to drain or resume")
    meta = _meta(as_of or created, cfg, fleet, created, cluster, max_age_hours, no_execute)
    return scripts.render(platform, steps, meta, lines)


def node_conditions_json(actions: pl.DataFrame, as_of: datetime, made_by: str, cluster: str | None = None,
                         resume: pl.DataFrame | None = None, generated: datetime | None = None) -> dict:
    """Per node, the condition a controller can act on, in the shape node-problem-detector publishes
    (Kubernetes NodeCondition: type, status, reason, message, lastHeartbeatTime, lastTransitionTime): type
    GoodputDrainRecommended, status "True" for drain_now and drain_after_job, "False" for watch and for a node
    to resume; reason the action in CamelCase (DrainNow, DrainAfterJob, Watch, RepairedAndValidated)."""
    generated = generated or _utcnow()
    nodes = []
    for r in _safe(actions).sort("host").iter_rows(named=True):
        reason = "".join(w.capitalize() for w in r["action"].split("_"))
        message = (f"{drain_reason(r['action'], r['cause'] or 'unknown', r['score'])}: "
                   f"{_CONTROL.sub(' ', r['reason'] or '')}").rstrip(": ")
        nodes.append({"name": r["host"], "conditions": [{
            "type": CONDITION_TYPE, "status": "True" if r["action"] in DRAIN_ACTIONS else "False",
            "reason": reason, "message": message[:1024], "lastHeartbeatTime": _iso(generated),
            "lastTransitionTime": _iso(r["since"]) if r.get("since") is not None else _iso(as_of)}]})
    for host, evidence in _resume_frame(resume, actions).iter_rows():
        nodes.append({"name": host, "conditions": [{
            "type": CONDITION_TYPE, "status": "False", "reason": "RepairedAndValidated",
            "message": resume_reason(evidence), "lastHeartbeatTime": _iso(generated),
            "lastTransitionTime": _iso(as_of)}]})
    return {"generated_at": _iso(generated), "as_of": _iso(as_of), "made_by": made_by, "cluster": cluster,
            "taint": K8S_TAINT_KEY, "nodes": nodes}


def _write(path: Path, text: str, mode: int | None = None) -> None:
    """Whole or not at all: a script half written must never be found and run."""
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_text(text)
    if mode is not None:
        tmp.chmod(mode)
    os.replace(tmp, path)


def write_exports(actions: pl.DataFrame, out_dir: Path, as_of: datetime, made_by: str,
                  cfg: LadderConfig = LadderConfig(), plan: pl.DataFrame | None = None,
                  slurm: pl.DataFrame | None = None, cluster: str | None = None, *,
                  resume: pl.DataFrame | None = None, platform: str = "slurm", no_execute: bool = False,
                  fleet: int | None = None, override: ExportOverride | None = None,
                  max_age_hours: int = scripts.DEFAULT_MAX_AGE_HOURS,
                  created: datetime | None = None) -> dict[str, Path]:
    """blocklist.txt, blocklist.json, and drain.sh (platform slurm or both), kubectl.sh and node_conditions.json
    (kubernetes or both), and validation_plan.json when a plan is given, in ``out_dir``; returns their paths.
    ``slurm``: the nodes Slurm already has drained or down (slurm_out_of_service): the scripts leave them alone,
    blocklist.json gives their state and reason, blocklist.txt still lists them. ``resume`` (host, evidence): nodes
    goodput drained that were since repaired and passed validation; the scripts resume those still out under
    goodput's tag. ``fleet``: the fleet size the scripts' run-time cap is taken of (None: max_drain_floor alone).
    ``override``: the export was forced past the cap (`goodput export --force --why`). ``created``: the
    export's time, which the scripts' age limit counts from (default now)."""
    if platform not in PLATFORMS:
        raise ValueError(f"platform is one of {PLATFORMS}, not {platform!r}")
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    created = (created.astimezone(timezone.utc).replace(tzinfo=None) if created and created.tzinfo else created) \
        or _utcnow()
    drains = _safe_drains(actions)
    resumes = _resume_frame(resume, actions)
    paths = {"blocklist.txt": out_dir / "blocklist.txt", "blocklist.json": out_dir / "blocklist.json"}
    hostlist = compress_hostlist(drains["host"].to_list())
    paths["blocklist.txt"].write_text(hostlist + "\n" if hostlist else "")
    already = int(with_slurm(drains, slurm)["left_alone"].sum())
    header = (f"Made by {made_by}\n" + (f"cluster {cluster}\n" if cluster else "")
              + f"as of {_iso(as_of)}: {drains.height} node(s) to drain"
              + (f", {already} of them already drained or down in Slurm (left alone)" if already else "")
              + (f"\n{resumes.height} node(s) to resume: goodput drained them, they were repaired and passed validation"
                 if resumes.height else "")
              + (f"\n{override.header()}" if override else ""))
    common = dict(resume=resume, as_of=as_of, cfg=cfg, fleet=fleet, created=created, max_age_hours=max_age_hours)
    if platform in ("slurm", "both"):
        paths["drain.sh"] = out_dir / "drain.sh"
        _write(paths["drain.sh"], drain_script(actions, header, slurm, cluster, platform="slurm", **common), 0o755)
    if platform in ("kubernetes", "both"):
        paths["kubectl.sh"] = out_dir / "kubectl.sh"
        _write(paths["kubectl.sh"], drain_script(actions, header, slurm, cluster, platform="kubernetes",
                                                 no_execute=no_execute, **common), 0o755)
        paths["node_conditions.json"] = out_dir / "node_conditions.json"
        paths["node_conditions.json"].write_text(json.dumps(
            node_conditions_json(actions, as_of, made_by, cluster, resume, created), indent=2) + "\n")
    paths["blocklist.json"].write_text(json.dumps(blocklist_json(
        actions, as_of, made_by, cfg, slurm, cluster, resume=resume, fleet=fleet, override=override,
        generated=created, platform=platform), indent=2) + "\n")
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
