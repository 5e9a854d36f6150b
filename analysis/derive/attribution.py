"""Why each job failed: classify node events with the taxonomy, attribute
failures to causes and hosts, chain job runs, group node incidents. All set
operations run in DuckDB (sql/derive/); this module wires them up."""
from __future__ import annotations

import hashlib
from dataclasses import dataclass
from datetime import timedelta

import duckdb
import polars as pl

from analysis import sql
from analysis.derive import marks
from analysis.derive.taxonomy import XID_KEPT, XID_TWIN, Taxonomy
from analysis.settings import RunsConfig


MESSAGE_RULE = {"rule_id": "rule_id", "m_message": "pattern", "m_kind": "kinds", "m_source": "sources",
                "m_code": "codes", "m_severity": "severities"}  # rule field -> match_rule_message parameter


def classify_events(con: duckdb.DuckDBPyConnection, taxonomy: Taxonomy) -> int:
    """One statement per message-pattern rule, with the rule's fields as parameters:
    DuckDB compiles a constant pattern once, where a pattern column joined
    against the events was compiled again for every row (100x slower). The reason
    rules run over each distinct operator text once (operator_reasons), not over the events.
    When classified_events holds a build by these statements and rules (its mark), only the events from the
    first day whose node events changed are classified again (classified_event_days): an event's rule
    depends on itself, its copies (the same time), the kernel XID it may copy (twin_s either way) and the events
    a counting rule counts before it."""
    is_reason = pl.col("reason_order").is_not_null()
    rules = (taxonomy.rules.filter(pl.col("m_message").is_not_null() & ~is_reason)
             .select(list(MESSAGE_RULE)).rename(MESSAGE_RULE))
    causes = causes_frame(taxonomy)
    mark = classify_mark(taxonomy.rules, causes, taxonomy.twin_s)
    sql.run_steps(con, [("schema/classified_event_days", None), ("derive/stage_classified_event_days", None)])
    extend = (sql.table_exists(con, "classified_events")
              and sql.query(con, "ops/derived_mark_get", {"step": mark}).height > 0)
    since, timeless = con.execute(sql.load("derive/classify_since")).fetchall()[0] if extend else (None, False)
    # an event up to twin_s before that day may be the XID twin of a line in it (stage_xid_twins): from there on
    since = since - timedelta(seconds=taxonomy.twin_s) if since is not None else None
    # the events without a time changed, or a line has events before and after the first day that changed:
    # all are classified again
    if timeless or (since is not None and sql.scalar(con, "derive/classify_straddles", {"since": since})):
        extend, since = False, None
    if extend and since is None:  # not one event changed: nothing to classify again
        con.execute("DROP TABLE event_days_now")
        return sql.count(con, "classified_events")
    longest = taxonomy.rules["count_window_s"].drop_nulls().max() or 0
    scope = {"since": since, "scan_from": since - timedelta(seconds=int(longest)) if since else None}
    twins = {**scope, "twin_s": taxonomy.twin_s, "kept_source": XID_KEPT, "twin_source": XID_TWIN}
    sql.run_staged(con, {"staged_rules": taxonomy.rules, "staged_causes": causes}, [
        ("derive/store_taxonomy_rules", None), ("derive/store_taxonomy_causes", None),
        ("derive/stage_classified_events", scope), ("derive/stage_xid_twins", twins),
        *[("derive/match_rule_message", {**rule, **scope}) for rule in rules.iter_rows(named=True)],
        ("derive/stage_reason_texts", None), *reason_steps(taxonomy),
        ("derive/store_operator_reasons", scope), ("derive/build_classified_events", scope),
        ("derive/store_classified_events", scope) if extend else ("derive/replace_classified_events", None),
        ("derive/store_classified_event_days", None), ("derive/forget_classify_marks", None),
        marks.record(mark, marks.Mark(0, None))])
    return sql.count(con, "classified_events")


ATTRIBUTION_STATEMENTS = ("derive/stage_attributed_days", "derive/attribution_since",
                          "derive/build_failure_attribution", "derive/store_failure_attribution",
                          "derive/replace_failure_attribution")


def attribution_mark(window: dict) -> str:
    """The derived_marks step of a failure_attribution build: the digest of its statements and windows."""
    text = "\n".join(sql.load(name) for name in ATTRIBUTION_STATEMENTS) + repr(sorted(window.items()))
    return "failure_attribution " + hashlib.sha256(text.encode()).hexdigest()[:16]


CLASSIFY_STATEMENTS = ("derive/stage_classified_event_days", "derive/classify_since", "derive/classify_straddles",
                       "derive/store_taxonomy_rules", "derive/store_taxonomy_causes", "derive/stage_classified_events",
                       "derive/stage_xid_twins",
                       "derive/match_rule_message", "derive/stage_reason_texts", "derive/reason_words_macro",
                       "derive/reason_texts_of", "derive/match_reason_text", "derive/reason_winners",
                       "derive/store_operator_reasons", "derive/build_classified_events",
                       "derive/store_classified_events", "derive/replace_classified_events",
                       "schema/warehouse")  # its macro operator_text decides which texts the reason rules read


def classify_mark(rules: pl.DataFrame, causes: pl.DataFrame, twin_s: int) -> str:
    """The derived_marks step of a classified_events build: the digest of its statements, rules, causes and XID
    twin window, so that a build by other code or another taxonomy is never extended (every event is classified
    again)."""
    text = ("\n".join(sql.load(name) for name in CLASSIFY_STATEMENTS) + rules.write_ndjson() + causes.write_ndjson()
            + f"twin_s={twin_s}")
    return "classified_events " + hashlib.sha256(text.encode()).hexdigest()[:16]


def reason_steps(taxonomy: Taxonomy) -> list[tuple[str, dict | None]]:
    """The statements that classify the texts staged as operator_texts: each reason rule over each text once, the
    first in the list's order that matches winning (reason_winners)."""
    rules = taxonomy.rules.filter(pl.col("reason_order").is_not_null()).select(
        "rule_id", "reason_order", pattern="m_message").to_dicts()
    return [("derive/reason_words_macro", None), ("derive/reason_texts_of", None),
            *[("derive/match_reason_text", rule) for rule in rules], ("derive/reason_winners", None)]


def classify_texts(texts: list[str], taxonomy: Taxonomy) -> pl.DataFrame:
    """text, rule, cause, family for each text, as the pipeline's reason rules classify a drain reason, ticket or
    health message (the same statements, on a connection of its own); rule NULL: unclassified."""
    frame = pl.DataFrame({"text": list(dict.fromkeys(texts))}, schema={"text": pl.Utf8})
    with duckdb.connect() as con:
        con.register("operator_texts", frame)
        sql.run_steps(con, reason_steps(taxonomy))
        winners = con.sql("SELECT text, rule_id AS rule FROM reason_winners").pl()
    causes = taxonomy.rules.select(rule="rule_id", cause="cause")
    families = pl.DataFrame([(c, s["family"]) for c, s in taxonomy.causes.items()], schema=["cause", "family"],
                            orient="row")
    return (frame.join(winners, on="text", how="left").join(causes, on="rule", how="left")
            .join(families, on="cause", how="left"))


def causes_frame(taxonomy: Taxonomy) -> pl.DataFrame:
    """taxonomy_causes: one row per cause in force."""
    return pl.DataFrame(
        [{"cause": c, "label": label, "domain": spec["domain"], "component": spec["component"],
          "family": spec["family"], "planned": spec["planned"], "description": spec.get("description")}
         for (c, spec), label in zip(taxonomy.causes.items(), taxonomy.labels().values())],
        schema={"cause": pl.Utf8, "label": pl.Utf8, "domain": pl.Utf8, "component": pl.Utf8, "family": pl.Utf8,
                "planned": pl.Boolean, "description": pl.Utf8})


def attribute_failures(con: duckdb.DuckDBPyConnection, taxonomy: Taxonomy) -> dict[str, int]:
    """failure_attribution and its views. When the table holds a build by these statements and windows (its
    mark), only the instances whose window reaches the first day whose instances or classified events changed
    are judged again (attributed_days): an instance's verdict reads its own row and the events in its window."""
    # node events meet the job hosts in time buckets at least as wide as the window: each host in 1-2 buckets
    window = {"before_s": taxonomy.before_s, "after_s": taxonomy.after_s,
              "bucket_s": max(3600, taxonomy.before_s + taxonomy.after_s)}
    mark = attribution_mark(window)
    sql.run_steps(con, [("schema/attributed_days", None), ("derive/stage_attributed_days", None)])
    extend = (sql.table_exists(con, "failure_attribution")
              and sql.query(con, "ops/derived_mark_get", {"step": mark}).height > 0)
    jobs_from, events_from, timeless = (con.execute(sql.load("derive/attribution_since")).fetchall()[0] if extend
                                        else (None, None, False))
    # an instance's events lie up to after_s past its end: a changed event day reaches the ends after_s before it
    starts = [t for t in (jobs_from, events_from and events_from - timedelta(seconds=taxonomy.after_s)) if t]
    redo_from = min(starts) if starts else None
    if timeless:  # the events without a time changed: every instance is judged again
        extend, redo_from = False, None
    if extend and redo_from is None:  # nothing it reads changed
        con.execute("DROP TABLE attributed_days_now")
    else:
        scope = {**window, "redo_from": redo_from}
        sql.run_steps(con, [("derive/build_failure_attribution", scope),
                            ("derive/store_failure_attribution", scope) if extend
                            else ("derive/replace_failure_attribution", None),
                            ("derive/store_attributed_days", None), ("derive/forget_attribution_marks", None),
                            marks.record(mark, marks.Mark(0, None)),
                            ("derive/view_job_failure_causes", None), ("derive/view_job_status_breakdown", None),
                            ("derive/view_failure_rates_by_cause", None)])
    return {"rows": sql.count(con, "failure_attribution"),
            "failures": sql.scalar(con, "derive/count_primary_attributions")}


RUN_STATEMENTS = ("derive/stage_job_run_inputs", "derive/stage_job_run_scope", "derive/stage_job_run_scope_all",
                  "derive/build_job_runs", "derive/store_job_runs", "derive/replace_job_runs")


def build_job_runs(con: duckdb.DuckDBPyConnection, gap_s: int = RunsConfig.run_gap_s,
                   crash_loop_min: int = RunsConfig.crash_loop_min) -> int:
    """job_runs. When the table holds a build of these statements with these settings (its mark in
    derived_marks), only the end of each (user, job name, size) group whose jobs changed is chained again, from the
    run before the first changed job (sql/derive/stage_job_run_scope.sql); otherwise every job. Either way the
    table is the same."""
    params = {"gap_s": gap_s, "crash_loop_min": crash_loop_min}
    mark = runs_mark(params)
    extend = sql.table_exists(con, "job_runs") and sql.query(con, "ops/derived_mark_get", {"step": mark}).height > 0
    scope, store = (("derive/stage_job_run_scope", "derive/store_job_runs") if extend else
                    ("derive/stage_job_run_scope_all", "derive/replace_job_runs"))
    sql.run_steps(con, [("derive/stage_job_run_inputs", None), (scope, None), ("derive/build_job_runs", params),
                        (store, None), ("derive/forget_job_runs_marks", None),
                        marks.record(mark, marks.Mark(0, None))])
    return sql.count(con, "job_runs")


def runs_mark(params: dict) -> str:
    """The derived_marks step of a job_runs build: the digest of its statements and settings, so that a build
    by other code or settings is never extended (the whole table is chained again)."""
    text = "\n".join(sql.load(name) for name in RUN_STATEMENTS) + repr(sorted(params.items()))
    return "job_runs " + hashlib.sha256(text.encode()).hexdigest()[:16]


def build_node_incidents(con: duckdb.DuckDBPyConnection, gap_s: int = RunsConfig.incident_gap_s) -> int:
    sql.run_steps(con, [("derive/build_node_incidents", {"gap_s": gap_s}), ("derive/view_cause_cooccurrence", None),
                       ("derive/view_top_offending_nodes", None), ("derive/build_node_outages", None),
                       ("derive/build_node_availability", None),
                       ("derive/view_event_episodes", None)])
    return sql.count(con, "node_incidents")


@dataclass
class InstanceExplanation:
    job_id: str
    instance: int
    state: str
    start_time: object
    end_time: object
    nodes: list[str]
    primary: dict | None  # cause, domain, host, rule, event_time, message
    events: pl.DataFrame  # every classified event in the window on the job's nodes
    is_failure: bool = False  # job_failure_causes.is_failure: what crash loops and job_run_ettr.failures count
    maintenance: bool = False  # requeued while one of its nodes was in planned maintenance
    stragglers: pl.DataFrame | None = None  # its straggler episodes (straggler_episodes), when that step has run


def explain_job(con: duckdb.DuckDBPyConnection, job_id: str, taxonomy: Taxonomy) -> list[InstanceExplanation]:
    """Everything `goodput why` prints for one job id (all its instances)."""
    instances = sql.query(con, "report/why_instances", {"job_id": job_id})
    out = []
    for row in instances.iter_rows(named=True):
        events = sql.query(con, "report/why_events", {"job_id": job_id, "instance": row["instance"],
                                               "before_s": taxonomy.before_s, "after_s": taxonomy.after_s})
        primary = sql.query(con, "report/why_primary", {"job_id": job_id, "instance": row["instance"]})
        slow = (sql.query(con, "report/why_stragglers", {"job_id": job_id, "instance": row["instance"]})
                if sql.table_exists(con, "straggler_episodes") else None)
        out.append(InstanceExplanation(row["job_id"], row["instance"], row["state"], row["start_time"],
                                       row["end_time"], list(row["nodes"] or []),
                                       primary.row(0, named=True) if primary.height else None, events,
                                       row["is_failure"], row["maintenance"], slow))
    return out
