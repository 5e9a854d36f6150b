"""The goodput Dagster code location (loaded by workspace.yaml / `dagster dev`)."""
from __future__ import annotations

from dagster import Definitions, in_process_executor

from analysis.threads import bound_native_threads

from assets.criteria import benchmark_criteria, benchmarks_repeatable, criteria_exports
from assets.joblogs import job_log_events
from assets.network import port_counter_events
from assets.telemetry import detector_evaluation, machine_alerts
from assets.attribution import classified_events, failure_attribution, job_runs, node_incidents, one_primary_cause
from assets.derived import jobs, jobs_instances_sequential, node_events
from assets.metrics import failure_rates, goodput, iteration_degradation, job_run_ettr, node_gpus
from assets.models import drain_share_sane, node_actions, node_exports
from assets.ingest import ingest_assets, ingest_checks, unrecognised_files
from assets.nightly import (daily_source_volume, reject_rate_below_threshold, reliability_report, sources_present,
                            volume_steady)
from assets.resources import build_resources
from pipelines.schedules import new_files_sensor, nightly, nightly_schedule, refresh

all_assets = [*ingest_assets, unrecognised_files, jobs, node_events, classified_events, failure_attribution, job_runs,
              node_incidents, job_run_ettr, node_gpus, failure_rates, goodput, iteration_degradation, node_actions, node_exports,
              benchmark_criteria, criteria_exports, machine_alerts, detector_evaluation, port_counter_events,
              job_log_events]
daily_assets = [daily_source_volume, reliability_report]
all_checks = [*ingest_checks, jobs_instances_sequential, one_primary_cause, drain_share_sane,
              benchmarks_repeatable]
daily_checks = [sources_present, reject_rate_below_threshold, volume_steady]

bound_native_threads()  # a run worker shares the machine: no spinning thread pools (analysis/threads.py)

defs = Definitions(
    assets=[*all_assets, *daily_assets],
    asset_checks=[*all_checks, *daily_checks],
    jobs=[nightly, refresh],
    schedules=[nightly_schedule],
    sensors=[new_files_sensor],
    resources=build_resources(),
    # DuckDB allows one writing process per file: assets run one after another
    # in one process rather than in parallel subprocesses fighting for the lock.
    executor=in_process_executor,
)
