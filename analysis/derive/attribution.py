"""Why each job failed: classify node events with the taxonomy, attribute
failures to causes and hosts, chain job runs, group node incidents. All set
operations run in DuckDB (sql/derive/); this module wires them up."""
from __future__ import annotations

from dataclasses import dataclass

import duckdb
import polars as pl

from analysis import sql
from analysis.derive.taxonomy import Taxonomy


MESSAGE_RULE = {"rule_id": "rule_id", "m_message": "pattern", "m_kind": "kinds", "m_source": "sources",
                "m_code": "codes", "m_severity": "severities"}  # rule field -> match_rule_message parameter


def classify_events(con: duckdb.DuckDBPyConnection, taxonomy: Taxonomy) -> int:
    """One statement per message-pattern rule, with the rule's fields as parameters:
    DuckDB compiles a constant pattern once, where a pattern column joined
    against the events was compiled again for every row (100x slower)."""
    rules = taxonomy.rules.filter(pl.col("m_message").is_not_null()).select(list(MESSAGE_RULE)).rename(MESSAGE_RULE)
    con.register("staged_rules", taxonomy.rules)
    try:
        sql.run_steps(con, [("derive/store_taxonomy_rules", None), ("derive/stage_classified_events", None),
                            *[("derive/match_rule_message", rule) for rule in rules.iter_rows(named=True)],
                            ("derive/build_classified_events", None)])
    finally:
        con.unregister("staged_rules")
    return sql.count(con, "classified_events")


def attribute_failures(con: duckdb.DuckDBPyConnection, taxonomy: Taxonomy) -> dict[str, int]:
    # node events meet the job hosts in time buckets at least as wide as the window: each host in 1-2 buckets
    window = {"before_s": taxonomy.before_s, "after_s": taxonomy.after_s,
              "bucket_s": max(3600, taxonomy.before_s + taxonomy.after_s)}
    sql.run_steps(con, [("derive/build_failure_attribution", window), ("derive/view_job_failure_causes", None),
                        ("derive/view_job_status_breakdown", None), ("derive/view_failure_rates_by_cause", None)])
    return {"rows": sql.count(con, "failure_attribution"),
            "failures": sql.scalar(con, "derive/count_primary_attributions")}


def build_job_runs(con: duckdb.DuckDBPyConnection, gap_s: int = 3600, crash_loop_min: int = 5) -> int:
    sql.run_steps(con, [("derive/build_job_runs", {"gap_s": gap_s, "crash_loop_min": crash_loop_min})])
    return sql.count(con, "job_runs")


def build_node_incidents(con: duckdb.DuckDBPyConnection, gap_s: int = 1800) -> int:
    sql.run_steps(con, [("derive/build_node_incidents", {"gap_s": gap_s}), ("derive/view_cause_cooccurrence", None),
                       ("derive/view_top_offending_nodes", None)])
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


def explain_job(con: duckdb.DuckDBPyConnection, job_id: str, taxonomy: Taxonomy) -> list[InstanceExplanation]:
    """Everything `goodput why` prints for one job id (all its instances)."""
    instances = sql.query(con, "report/why_instances", {"job_id": job_id})
    out = []
    for row in instances.iter_rows(named=True):
        events = sql.query(con, "report/why_events", {"job_id": job_id, "instance": row["instance"],
                                               "before_s": taxonomy.before_s, "after_s": taxonomy.after_s})
        primary = sql.query(con, "report/why_primary", {"job_id": job_id, "instance": row["instance"]})
        out.append(InstanceExplanation(row["job_id"], row["instance"], row["state"], row["start_time"],
                                       row["end_time"], list(row["nodes"] or []),
                                       primary.row(0, named=True) if primary.height else None, events,
                                       row["is_failure"], row["maintenance"]))
    return out
