"""The goodput Dagster code location (loaded by workspace.yaml / `dagster dev`)."""
from __future__ import annotations

from dagster import AssetSelection, Definitions, define_asset_job, in_process_executor

from assets.attribution import classified_events, failure_attribution, job_runs, node_incidents, one_primary_cause
from assets.derived import jobs, jobs_instances_sequential, node_events
from assets.metrics import failure_rates, goodput, iteration_degradation, job_run_ettr
from assets.ingest import ingest_assets, ingest_checks, unrecognised_files
from pipelines.resources import LogSources, MetricsSettings, TaxonomyConfig, Warehouse

all_assets = [*ingest_assets, unrecognised_files, jobs, node_events, classified_events, failure_attribution, job_runs,
              node_incidents, job_run_ettr, failure_rates, goodput, iteration_degradation]
all_checks = [*ingest_checks, jobs_instances_sequential, one_primary_cause]

nightly = define_asset_job("nightly", selection=AssetSelection.all(), description="Ingest every source and rebuild every table.")

defs = Definitions(
    assets=all_assets,
    asset_checks=all_checks,
    jobs=[nightly],
    resources={"warehouse": Warehouse(), "sources": LogSources(), "taxonomy": TaxonomyConfig(),
               "settings": MetricsSettings()},
    # DuckDB allows one writing process per file: assets run one after another
    # in one process rather than in parallel subprocesses fighting for the lock.
    executor=in_process_executor,
)
