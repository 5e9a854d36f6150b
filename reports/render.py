"""Render the self-contained HTML reliability report from the warehouse."""
from __future__ import annotations

import json
import re
import shutil
from datetime import date
from functools import lru_cache
from pathlib import Path

import duckdb
import polars as pl
from jinja2 import Environment, FileSystemLoader, pass_context, select_autoescape
from markupsafe import Markup

from analysis import package_files, sql
from analysis.criteria.learn import CriteriaConfig
from analysis.derive import ettr
from analysis.derive.metrics import PROJECTION_GPUS, fleet_gpus_per_node
from analysis.derive.taxonomy import cause_label, load as load_taxonomy
from analysis.fmt import fmt_num, fmt_pct  # the templates' `num` and `pct`, and the terminal's numbers
from analysis.ingest.hosts import compress_hostlist
from analysis.nodes.exports import DRAIN_ACTIONS, platform_of, slurm_out_of_service, with_slurm
from analysis.settings import RunsConfig
from reports import charts, cost, headline
from reports.javascript import inline_javascript

CACHE = ".cache"  # OUT/.cache: what a report keeps for the next (reports/javascript.py)

TEMPLATES = package_files.path("reports", "templates")


def _json(spec: dict) -> Markup:
    """A spec inlined in a <script>: log text inside it (job names, messages)
    must not close the tag or open a comment."""
    text = json.dumps(spec, default=str).replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")
    return Markup(text)


def _count(value, noun: str) -> str:
    """'1 job run', '2 job runs': a caption reads as a sentence."""
    return f"{fmt_num(value)} {noun}{'' if value == 1 else 's'}"


def template_env(labels: dict[str, str] | None = None) -> Environment:
    """The report templates with goodput's filters; one environment per set of cause labels, kept for the
    process, so a template is compiled once, not at every report (a nightly with days to back-fill renders many)."""
    return _template_env(tuple(sorted((labels or {}).items())))


@lru_cache(maxsize=8)
def _template_env(label_items: tuple[tuple[str, str], ...]) -> Environment:
    labels = dict(label_items)
    env = Environment(loader=FileSystemLoader(TEMPLATES), autoescape=select_autoescape(["html", "j2"]),
                      trim_blocks=True, lstrip_blocks=True)
    env.filters.update(pct=fmt_pct, num=fmt_num, count=_count, spec=_json, cause=lambda c: _cause(c, labels or {}),
                       causes_in_words=lambda t: _causes_in_words(t, labels or {}),
                       p1=lambda v: f"{v:.1f}%",  # a share already in percent, one decimal (reports/headline.py)
                       # the price is the render's (context["price"]): the environment is shared by every render
                       money=pass_context(lambda ctx, v, partition=None: cost.money(v, ctx.get("price"), partition)),
                       price_per_hour=pass_context(lambda ctx, partition: cost.per_hour(ctx.get("price"), partition)))
    return env


def _cause(ids, labels: dict[str, str]) -> Markup:
    """A cause (or a ', '-joined list of them) in words, its id in a tooltip; escaped (ids come from rule files)."""
    if not ids:
        return Markup("")
    return Markup(", ").join(Markup('<span title="{}">{}</span>').format(c, cause_label(c, labels))
                             for c in str(ids).split(", "))


def _causes_in_words(text: str | None, labels: dict[str, str]) -> Markup:
    """A reason the ladder wrote ("first incident: gpu_unavailable") with each cause id in words, the id in a
    tooltip; the rest escaped (reasons quote operators' text)."""
    if not text:
        return Markup("")
    ids = sorted((c for c in labels if c in text), key=len, reverse=True)
    if not ids:
        return Markup.escape(text)
    parts = re.split(r"\b(" + "|".join(map(re.escape, ids)) + r")\b", text)
    return Markup("").join(_cause(p, labels) if i % 2 else Markup.escape(p) for i, p in enumerate(parts))


RUN_MIN_GPUS, RUN_MIN_HOURS = 8, 6  # runs plotted against the expected-ETTR curve
RATE_WINDOW_DAYS = 30  # the rolling failure rate's window (sql/report/failure_rate.sql)
# a model judged on fewer held-out samples is not compared: one sample more or less moves its accuracy or
# concordance by several points, so its numbers would say nothing about the model
MIN_HELD_OUT = 30
AVAILABILITY_NODES = 10  # the nodes out of service longest, in the availability section
FLOOD_MIN_EVENTS, FLOODS_SHOWN = 100, 10  # an episode of this many repeats is a flood; the largest shown
STRAGGLERS_SHOWN = 10  # the costliest straggler episodes the report lists ...
STRAGGLER_NODES_SHOWN = 5  # ... and the nodes they cost the most
UNCLASSIFIED_SHOWN = 15  # the operator texts no reason rule knows, the most frequent shown


def gather(con: duckdb.DuckDBPyConnection, day: date, u0_h: float, dt_h: float, window: tuple[int, int] = (600, 300),
           crash_loop_min: int = RunsConfig.crash_loop_min, labels: dict[str, str] | None = None) -> dict:
    """Every number and table the report shows, from sql/report/."""
    q = lambda name, **p: sql.query(con, name, p or None)  # noqa: E731
    head = q("report/headline", day=day).row(0, named=True)
    r = (head["r_per_1000_node_days"] or 0) / 1000
    status, daily, rates = q("report/status", day=day), q("report/goodput_daily", day=day), q("report/failure_rate", day=day)
    checks, mttf = q("report/health_checks", day=day), q("report/mttf")
    runs = q("report/run_ettr", day=day, min_gpus=RUN_MIN_GPUS, min_hours=RUN_MIN_HOURS)
    # Meta eq. 1 with this cluster's queue time per (re)start and a typical run length
    q_h = runs["queue_hours_per_start"].median() if runs.height else 0.0
    run_h = runs["productive_hours"].median() if runs.height else None
    loss, co = q("report/loss_by_size", day=day), q("report/cooccurrence", day=day)
    if "straggler_episodes" in _present(con):  # jobs that did not fail lost GPU-hours waiting, by size too
        loss = pl.concat([loss, q("report/straggler_loss_by_size", day=day)], how="vertical_relaxed")
    split = q("report/capacity_split", day=day)
    per_node = fleet_gpus_per_node(con)  # r counts nodes: GPUs -> nodes at the fleet's size
    # the 1/(N r) projection at the report's r (the card's, as of its day), as mttf_projection has it at the last day's
    projection = pl.DataFrame({"gpus": PROJECTION_GPUS, "projected_mttf_hours": [
        ettr.job_mttf_hours(g / per_node, r) if r else None for g in PROJECTION_GPUS]},
        schema={"gpus": pl.Int64, "projected_mttf_hours": pl.Float64})
    rates_drawn = bool(rates.height and rates["rate"].is_not_null().any())
    measured = mttf.filter(pl.col("mttf_hours").is_not_null()).height
    # a chart with nothing to draw is left out: the template says why in words instead of an empty frame
    drawn = {
        "status": charts.status_breakdown(status) if status.height else None,
        "goodput": charts.goodput_trend(daily) if daily.height else None,
        "capacity": charts.capacity_split(split) if _capacity_totals(split) else None,
        "failure_rate": charts.failure_rate_over_time(rates, checks, labels or {}) if rates_drawn else None,
        "mttf": charts.mttf_by_size(mttf, projection)
        if measured or projection["projected_mttf_hours"].is_not_null().any() else None,
        "ettr": charts.ettr_by_size(runs, r, u0_h, dt_h, q_h or 0.0, run_h, gpus_per_node=per_node),
        "sweep": charts.checkpoint_sweep(r * 1000, u0_h, runs["n_gpus"].max() if runs.height else None, per_node),
        "loss": charts.loss_by_size(loss) if loss.height else None,
        "cooccurrence": charts.cooccurrence(co, labels or {}) if co.height else None,
    }
    drawn = {k: v for k, v in drawn.items() if v is not None}
    return {
        "day": day, "head": head, "charts": drawn, "node_sizes": q("report/node_sizes").to_dicts(), "curve": _curve_facts(drawn["ettr"]),
        "sweep_gpus": sorted({p["gpus"] for p in drawn["sweep"]["datasets"]["sweep"]}), "r": r * 1000,
        "projected": drawn["mttf"]["datasets"]["projection"] if "mttf" in drawn else [], "measured_sizes": measured,
        "u0_min": u0_h * 60, "dt_min": dt_h * 60, "target": charts.TARGET_ETTR,
        "run_min_gpus": RUN_MIN_GPUS, "run_min_hours": RUN_MIN_HOURS, "q_min": (q_h or 0) * 60,
        "ettr_step": charts.ETTR_STEP,
        "before_min": window[0] / 60, "after_min": window[1] / 60, "crash_loop_min": crash_loop_min,
        "status": status.to_dicts(), "checks": checks.to_dicts(), "mttf": mttf.to_dicts(),
        "runs": runs.height, "runs_mean_ettr": runs["ettr"].mean() if runs.height else None,
        "loss": loss.to_dicts(), "crash_loops": q("report/crash_loops", day=day).to_dicts(),
        "top_nodes": q("report/top_nodes", day=day).to_dicts(),
        "out_of_service": q("report/out_of_service", day=day).to_dicts(),
        "loss_by_account": q("report/loss_by_account", day=day).to_dicts(), "largest_failures": q("report/largest_failures", day=day).to_dicts(), "data_quality": q("report/data_quality").to_dicts(),
        "capacity": _capacity_totals(split),
        "rates_drawn": rates_drawn, "rate_window": RATE_WINDOW_DAYS, "rate_days": rates["day"].n_unique(),
        "failures_so_far": _failures_so_far(rates),
        "cooccurrence_pairs": co.filter(co["cause_a"] != co["cause_b"]).sort(["failures_with_both", "cause_a", "cause_b"], descending=[True, False, False]).head(5).to_dicts(),
        **node_history(con, day),
    }


def _present(con: duckdb.DuckDBPyConnection) -> set[str]:
    """The tables and views the warehouse holds (another cluster's, built by an older goodput, may lack some)."""
    return set(sql.query(con, "report/present_tables")["name"].to_list())


def _and(words: list[str]) -> str:
    """'a', 'a and b', 'a, b and c'."""
    return " and ".join([", ".join(words[:-1]), words[-1]] if len(words) > 2 else words)


def node_history(con: duckdb.DuckDBPyConnection, day: date) -> dict:
    """What the nodes' own history says up to ``day``: the sources' spans (a note when they end on different
    days), interruptions by root cause (Llama 3's Table 5), availability, event floods, and the operators' texts no
    reason rule understood. A section with nothing to show is None (the template leaves it out)."""
    present = _present(con)
    spans = sql.query(con, "report/source_spans") if "source_spans" in present else pl.DataFrame()
    return {"sources_note": sources_note(spans, day), "interruptions": interruptions(con, day, present),
            "availability": availability(con, spans, present), "floods": event_floods(con, day, present),
            "stragglers": stragglers(con, day, present),
            "unclassified": unclassified_reasons(con, present)}


# How far behind the last day of data a source may end before the report says so: a day (a dump taken before
# midnight), a week for the validation runs (weekly, not daily).
SOURCE_LAG_DAYS = 1
PERIODIC_SOURCE_LAG_DAYS = {"benchmarks": 7}


def sources_note(spans: pl.DataFrame, day: date) -> dict | None:
    """Where the sources' last days differ by more than their usual lag: each last day with the sources that end
    on it, earliest first (the report's day is the last day any source has data: a source that stopped earlier says
    nothing after it)."""
    if spans.height == 0:
        return None
    last = spans["last_day"].max()
    lag = pl.col("source").replace_strict(PERIODIC_SOURCE_LAG_DAYS, default=SOURCE_LAG_DAYS, return_dtype=pl.Int64)
    behind = spans.filter((pl.lit(last) - pl.col("last_day")).dt.total_days() > lag)
    if behind.height == 0:
        return None
    ends = spans.group_by("last_day").agg(pl.col("source").sort()).sort("last_day")
    return {"day": day, "ends": [{"day": last, "sources": _and(sources), "many": len(sources) > 1}
                                 for last, sources in ends.iter_rows()]}


def interruptions(con: duckdb.DuckDBPyConnection, day: date, present: set[str]) -> dict | None:
    """Interruptions per root cause up to ``day`` (sql/report/interruptions.sql): unplanned rows, planned apart."""
    if not {"node_incidents", "node_outages", "node_availability", "taxonomy_causes"} <= present:
        return None
    rows = sql.query(con, "report/interruptions", {"day": day})
    if rows.height == 0:
        return None
    unplanned, first = rows.filter(~pl.col("planned")), rows.row(0, named=True)
    total = int(unplanned["interruptions"].sum())
    return {"rows": unplanned.to_dicts(), "planned": rows.filter(pl.col("planned")).to_dicts(), "total": total,
            "from_operator": int(unplanned["from_operator"].sum()), "drained": int(unplanned["drained"].sum()),
            "first_day": first["first_day"], "last_day": first["last_day"], "nodes": first["nodes"],
            "node_days": first["node_days"],
            "per_1000": 1000 * total / first["node_days"] if first["node_days"] else None}


def availability(con: duckdb.DuckDBPyConnection, spans: pl.DataFrame, present: set[str]) -> dict | None:
    """Node outages per cause and the nodes out of service longest, over the whole data span; None without any."""
    if not {"availability_by_cause", "node_availability", "node_outages", "taxonomy_causes"} <= present:
        return None
    by_cause = sql.query(con, "report/availability_by_cause")
    nodes = sql.query(con, "report/availability_nodes", {"limit": AVAILABILITY_NODES})
    if by_cause.height == 0 or nodes.height == 0:
        return None
    fleet = nodes.select(pl.col("^fleet_.*$", "nodes_out_ever")).row(0, named=True)
    return {"by_cause": by_cause.to_dicts(), "nodes": nodes.to_dicts(), **fleet,
            "first_day": spans["first_day"].min() if spans.height else None,
            "last_day": spans["last_day"].max() if spans.height else None}


def event_floods(con: duckdb.DuckDBPyConnection, day: date, present: set[str]) -> dict | None:
    """The largest floods of one event (episodes of FLOOD_MIN_EVENTS repeats or more) begun by ``day``."""
    if not {"event_episodes", "taxonomy_causes"} <= present:
        return None
    rows = sql.query(con, "report/event_floods", {"day": day, "min_events": FLOOD_MIN_EVENTS, "limit": FLOODS_SHOWN})
    if rows.height == 0:
        return None
    return {"rows": rows.to_dicts(), "count": rows["floods"][0], "events": rows["flood_events"][0],
            "min_events": FLOOD_MIN_EVENTS}


def stragglers(con: duckdb.DuckDBPyConnection, day: date, present: set[str]) -> dict | None:
    """The costliest straggler episodes begun by ``day`` (docs/methods.md#stragglers); None without any."""
    if "straggler_episodes" not in present:
        return None
    rows = sql.query(con, "report/stragglers", {"day": day, "limit": STRAGGLERS_SHOWN})
    if rows.height == 0:
        return None
    nodes = sql.query(con, "report/straggler_nodes", {"day": day, "limit": STRAGGLER_NODES_SHOWN})
    return {"rows": rows.to_dicts(), "episodes": rows["episodes"][0], "gpu_hours": rows["all_gpu_hours"][0],
            "hosts": rows["hosts"][0], "nodes": nodes.to_dicts(),
            "by_origin": sql.query(con, "report/straggler_origins", {"day": day}).to_dicts()}


def unclassified_reasons(con: duckdb.DuckDBPyConnection, present: set[str]) -> dict | None:
    """The operators' texts no reason rule understood, the most frequent first; None when every one is understood."""
    if "unclassified_reasons" not in present:
        return None
    rows = sql.query(con, "report/unclassified_reasons", {"limit": UNCLASSIFIED_SHOWN})
    if rows.height == 0:
        return None
    return {"rows": rows.to_dicts(), "texts": rows["texts"][0], "events": rows["text_events"][0]}


def _failures_so_far(rates: pl.DataFrame) -> list[dict]:
    """Infrastructure failures per cause over the days the report covers, most first: what the report says
    in words while the rolling rate cannot be drawn."""
    if rates.height == 0:
        return []
    per = rates.group_by("cause").agg(pl.col("failures").sum()).filter(pl.col("failures") > 0)
    return per.sort(["failures", "cause"], descending=[True, False]).to_dicts()


def _curve_facts(spec: dict) -> dict:
    """What the expected-ETTR curve, as drawn, is made of: the caption says only that."""
    points = spec["datasets"]["expected"]
    first = lambda method: min((p["n_gpus"] for p in points if p["method"] == method), default=None)  # noqa: E731
    shared = {p["n_gpus"] for p in points if p["method"] != "closed form"}  # a segment's join point
    closed = [p["n_gpus"] for p in points if p["method"] == "closed form" and p["n_gpus"] not in shared]
    return {"up_to": max((p["n_gpus"] for p in points), default=None), "closed_form_to": max(closed, default=None),
            "monte_carlo_from": first("Monte Carlo"), "no_progress_from": first("no progress")}


def _capacity_totals(split: pl.DataFrame) -> dict | None:
    """The whole period's capacity split, shares of all capacity; what reliability can win back."""
    if split.height == 0 or not split["capacity"].sum():
        return None
    total = split["capacity"].sum()
    shares = {c: split[c].sum() / total for c, _ in charts.CAPACITY_PARTS}
    return {"days": split.height, "gpu_hours": total, **shares,
            "win_back": shares["infrastructure"] + shares["second_order"],
            "parts": [{"key": c, "name": n, "share": shares[c]} for c, n in charts.CAPACITY_PARTS]}


def _headline(head: dict, split: dict | None) -> dict:
    """The report's headline numbers, for the report asset's metadata (Dagster's catalog shows them)."""
    split = split or {}
    out = {"goodput_7d": head["goodput_7d"], "median_ettr_largest_runs": head["ettr_largest"],
           "infra_lost_gpu_hours": head["infra_lost_gpu_hours"], "failures_per_1000_node_days": head["r_per_1000_node_days"],
           "costliest_cause": head["worst_cause"], "nodes_out_of_service": head["nodes_out_of_service"],
           "capacity_productive": split.get("productive"), "capacity_idle": split.get("idle"),
           "reliability_can_win_back": split.get("win_back")}
    return {k: (float(v) if isinstance(v, (int, float)) or hasattr(v, "__float__") and not isinstance(v, str) else v)
            for k, v in out.items() if v is not None}


# The report speaks the cluster's scheduler (exports.platform_of: whose jobs the warehouse holds): what a node out of
# service is called, which script leaves it alone, how a job keeps off a node.
SCHEDULER_WORDS = {
    "slurm": {"name": "Slurm", "out": "drained or down in Slurm", "script": "drain.sh",
              "states": "Slurm's DOWN, DRAIN, FAIL, MAINT or REBOOT states"},
    "kubernetes": {"name": "Kubernetes", "out": "cordoned", "script": "kubectl.sh",
                   "states": "cordons (a Node unschedulable, its kubelet's NodeNotSchedulable event)"},
    "both": {"name": "the scheduler", "out": "drained, down or cordoned", "script": "drain.sh and kubectl.sh",
             "states": "Slurm's DOWN, DRAIN, FAIL, MAINT or REBOOT states and Kubernetes cordons"},
}


def keep_off(hosts: list[str], platform: str) -> str | None:
    """How a job keeps off ``hosts``: a Slurm hostlist for sbatch, else Kubernetes' node affinity term."""
    if not hosts:
        return None
    if platform == "kubernetes":
        return f"kubernetes.io/hostname NotIn [{', '.join(sorted(hosts))}]"
    return f"sbatch --exclude={compress_hostlist(hosts)}"


def node_models(con: duckdb.DuckDBPyConnection) -> dict | None:
    """Lemons, risk, evaluation and actions of the last `goodput models`; None before it ever ran."""
    present = set(sql.query(con, "report/node_models")["table_name"].to_list())
    if not {"lemon_scores", "node_actions", "model_evaluation"} <= present:
        return None
    q = lambda name: sql.query(con, name)  # noqa: E731
    actions, lemons, evaluation = q("report/node_actions"), q("report/lemons"), q("report/model_evaluation")
    # the nodes Slurm already has drained: the table says what drain.sh does with them, by the exports' rule
    actions = with_slurm(actions, slurm_out_of_service(con, actions["as_of"][0]) if actions.height else None)
    drains = actions.filter(pl.col("action").is_in(DRAIN_ACTIONS))["host"].to_list()
    # the table: what drains, and what is watched for more than a first incident (the rest in the appendix)
    shown = actions.filter(pl.col("action").is_in(DRAIN_ACTIONS) | (pl.col("score") > 0))
    risk = q("report/risk") if "node_risk" in present else pl.DataFrame()
    return {
        "as_of": lemons["as_of"][0] if lemons.height else None,
        "method": lemons["method"][0] if lemons.height else None,
        "lemons": lemons.to_dicts(), "evaluation": evaluation.to_dicts(), "min_held_out": MIN_HELD_OUT,
        # what is shown: lemons with a score or the verdict; the rest named in the appendix
        "lemons_shown": lemons.filter((pl.col("score") > 0) | pl.col("is_lemon")).to_dicts(),
        "lemons_zero": lemons.filter((pl.col("score") == 0) & ~pl.col("is_lemon"))["host"].to_list(),
        "evaluation_judged": bool(evaluation.height and (evaluation["n"].fill_null(0) >= MIN_HELD_OUT).any()),
        "risk_known": bool(actions.height and actions["p_incident_7d"].is_not_null().any()),
        "counts": dict(actions.group_by("action").len().iter_rows()), "left_alone": int(actions["left_alone"].sum()),
        "actions": actions.head(20).to_dicts(), "more_actions": max(shown.height - 20, 0),
        "actions_shown": shown.head(20).to_dicts(),
        "actions_zero": actions.filter((pl.col("action") == "watch") & (pl.col("score") == 0)).to_dicts(),
        "all_actions": actions.to_dicts(),
        "drain_hosts": drains,
        "plan": q("report/validation_plan").row(0, named=True) if "validation_plan" in present else None,
        "risk_nodes": risk.height,
        "chart": charts.risk_distribution(risk) if risk.height else None,
        # written by the node models since repeat offenders were added: absent on an older warehouse
        "offenders": q("report/repeat_offenders").to_dicts() if sql.table_exists(con, "repeat_offenders") else [],
    }


def benchmark_criteria(con: duckdb.DuckDBPyConnection, floor: float = 0.95) -> dict | None:
    """The latest criteria, their evaluation and the latest run's failures; None before `goodput criteria` ran."""
    present = set(sql.query(con, "report/node_models")["table_name"].to_list())
    if not {"benchmark_criteria", "criteria_evaluation", "benchmark_verdicts"} <= present:
        return None
    status = sql.query(con, "report/criteria")
    if status.height == 0:
        return None
    failures = sql.query(con, "report/validation_failures")
    guessed = [m for ms in status["guessed_metrics"].to_list() if ms for m in ms]
    return {"version": status["version"][0], "trained_from": status["trained_from"].min(),
            "trained_to": status["trained_to"].max(), "fleet": int(status["fleet"].max()),
            "status": dict(status.select("status", "metrics").iter_rows()), "guessed": guessed,
            "benchmarks": sql.query(con, "report/criteria_benchmarks").to_dicts(), "floor": floor,
            "min_hosts": CriteriaConfig.min_hosts,
            "run": failures["run_id"][0] if failures.height else None, "failed": failures.head(25).to_dicts(),
            "more_failed": max(failures.height - 25, 0)}


def telemetry_alerts(con: duckdb.DuckDBPyConnection, day: date) -> dict | None:
    """Minder's alerts of the last 30 days and the detectors' evaluation; None before detection ever ran."""
    present = set(sql.query(con, "report/node_models")["table_name"].to_list())
    if not {"machine_alerts", "telemetry_jobs"} <= present:
        return None
    jobs = con.sql("SELECT count(*) AS n, any_value(model_version) AS v FROM telemetry_jobs").pl().row(0, named=True)
    return {"alerts": sql.query(con, "report/machine_alerts", {"day": day}).to_dicts(), "jobs": jobs["n"],
            "model_version": jobs["v"],
            "evaluation": sql.query(con, "report/detector_evaluation").to_dicts()
            if "detector_evaluation" in present else []}


def first_screen(con: duckdb.DuckDBPyConnection, day: date, context: dict, labels: dict[str, str]) -> dict:
    """The headline's split, top actions and change since the previous period (reports/headline.py)."""
    spans = sql.query(con, "report/data_days").row(0) if "source_spans" in _present(con) else (None, None)
    return headline.first_screen(context, context["models"], sql.query(con, "report/goodput_days", {"day": day}),
                                 spans, labels)


def render_report(con: duckdb.DuckDBPyConnection, day: date, out_dir: Path, u0_h: float = 5 / 60,
                  dt_h: float = 1.0, window: tuple[int, int] = (600, 300), crash_loop_min: int = RunsConfig.crash_loop_min,
                  labels: dict[str, str] | None = None) -> Path:
    """Write out_dir/reliability-DAY.html and a copy as latest.html; return the dated path."""
    return render_with_headline(con, day, out_dir, u0_h, dt_h, window, crash_loop_min, labels)[0]


def render_with_headline(con: duckdb.DuckDBPyConnection, day: date, out_dir: Path, u0_h: float = 5 / 60,
                         dt_h: float = 1.0, window: tuple[int, int] = (600, 300), crash_loop_min: int = RunsConfig.crash_loop_min,
                         labels: dict[str, str] | None = None, health: pl.DataFrame | None = None,
                         price: dict | None = None) -> tuple[Path, dict]:
    """render_report, and the headline numbers it shows (the report asset's metadata), from the same queries.
    ``health`` (analysis.commands.data_health.assess): what the run could not use, the banner at the top."""
    labels = labels if labels is not None else load_taxonomy().labels()
    context = gather(con, day, u0_h, dt_h, window, crash_loop_min, labels)
    context["health"] = health.to_dicts() if health is not None else []
    context["models"] = node_models(con)
    platform = platform_of(con)
    context["sched"] = SCHEDULER_WORDS[platform]
    if context["models"]:
        context["models"]["keep_off"] = keep_off(context["models"]["drain_hosts"], platform)
    context["first"] = first_screen(con, day, context, labels)
    # money, when goodput.yaml prices a GPU-hour (reports/cost.py): per account and partition, and the weekly trend
    context["price"] = price
    context["loss_by_account"] = cost.priced(pl.DataFrame(context["loss_by_account"]), price).to_dicts() \
        if context["loss_by_account"] else []
    context["account_trend"] = cost.account_trend(sql.query(con, "report/loss_by_account_week", {"day": day}), price)
    context["criteria"] = benchmark_criteria(con)
    context["telemetry"] = telemetry_alerts(con, day)
    if context["models"] and context["models"]["chart"]:
        context["charts"]["risk"] = context["models"]["chart"]
    html = template_env(labels).get_template("report.html.j2").render(
        **context, javascript=Markup(inline_javascript(out_dir.parent / CACHE)))
    out_dir.mkdir(parents=True, exist_ok=True)
    path = out_dir / f"reliability-{day:%Y-%m-%d}.html"
    path.write_text(html)
    shutil.copyfile(path, out_dir / "latest.html")
    return path, _headline(context["head"], context["capacity"])
