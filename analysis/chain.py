"""Every derived table, in dependency order, without Dagster: what the assets
do one by one, for tests, benchmarks and scripts."""
from __future__ import annotations

import duckdb

from analysis import attribution, metrics
from analysis.jobs import build_jobs, map_switch_ports
from analysis.taxonomy import Taxonomy


def build_all(con: duckdb.DuckDBPyConnection, taxonomy: Taxonomy,
              metrics_cfg: metrics.MetricsConfig | None = None) -> dict:
    """jobs -> switch ports -> classified events -> attribution -> runs ->
    incidents, then (with ``metrics_cfg``) ETTR, failure rates, goodput, P_deg."""
    out = {"jobs": build_jobs(con), "unmapped_switch_events": map_switch_ports(con),
           "classified_events": attribution.classify_events(con, taxonomy),
           "attribution": attribution.attribute_failures(con, taxonomy),
           "job_runs": attribution.build_job_runs(con), "node_incidents": attribution.build_node_incidents(con)}
    if metrics_cfg is not None:
        out.update(run_ettr=metrics.build_run_ettr(con, metrics_cfg), failure_rate=metrics.build_failure_rates(con),
                   goodput=metrics.build_goodput(con, metrics_cfg),
                   iteration_degradation=metrics.build_iteration_degradation(con))
    return out
