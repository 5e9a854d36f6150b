"""Every derived table, in dependency order, without Dagster: what the assets
do one by one, for tests, benchmarks and scripts."""
from __future__ import annotations

from typing import Callable

import duckdb

from analysis import attribution, joblogs, metrics
from analysis.jobs import build_jobs, map_switch_ports
from analysis.taxonomy import Taxonomy


def steps(taxonomy: Taxonomy, metrics_cfg: metrics.MetricsConfig | None = None
          ) -> list[tuple[str, Callable[[duckdb.DuckDBPyConnection], object]]]:
    """jobs -> job-log events -> switch ports -> classified events -> attribution -> runs ->
    incidents, then (with ``metrics_cfg``) GPUs per node, ETTR, failure rates, goodput, P_deg."""
    out = [("jobs", build_jobs), ("job_log_events", joblogs.build_events), ("unmapped_switch_events", map_switch_ports),
           ("classified_events", lambda con: attribution.classify_events(con, taxonomy)),
           ("attribution", lambda con: attribution.attribute_failures(con, taxonomy)),
           ("job_runs", attribution.build_job_runs), ("node_incidents", attribution.build_node_incidents)]
    if metrics_cfg is not None:
        out += [("node_gpus", metrics.build_node_gpus),
                ("run_ettr", lambda con: metrics.build_run_ettr(con, metrics_cfg)),
                ("failure_rate", metrics.build_failure_rates),
                ("goodput", lambda con: metrics.build_goodput(con, metrics_cfg)),
                ("iteration_degradation", metrics.build_iteration_degradation)]
    return out


def build_all(con: duckdb.DuckDBPyConnection, taxonomy: Taxonomy,
              metrics_cfg: metrics.MetricsConfig | None = None) -> dict:
    """Run every step of ``steps``; returns each step's counts by name."""
    return {name: step(con) for name, step in steps(taxonomy, metrics_cfg)}
