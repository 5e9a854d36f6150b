"""The fleet's Dagster code location (workspace.yaml): a cluster is a static partition of ``cluster_nightly``.

Each partition is one cluster's nightly, the single-cluster pipeline (pipelines/runner.py) on
``$GOODPUT_FLEET_SOURCE/<cluster>`` into ``$GOODPUT_FLEET_DB_DIR/<cluster>.duckdb``; one warehouse per cluster,
so the partitions' runs run at once (the run coordinator's ``max_concurrent_runs``, docs/fleet.md), each in its
own process or, on Kubernetes, its own pod. ``fleet_report`` reads every cluster's warehouse when one is done.
The clusters are the folders of the fleet source when this module loads: reload the code location after adding
one."""

import os
from pathlib import Path

from dagster import (AssetExecutionContext, Definitions, DagsterRunStatus, Failure, MaterializeResult, MetadataValue,
                     RunRequest, ScheduleEvaluationContext, StaticPartitionsDefinition, asset, define_asset_job,
                     multiprocess_executor, run_status_sensor, schedule)

from analysis.fleet.clusters import Cluster, FleetError, clusters_in, warehouse_of
from analysis.threads import bound_native_threads
from assets.resources import FleetSettings

NIGHTLY_CRON = "0 3 * * *"


def _cluster_names() -> list[str]:
    """The fleet source's clusters; none (an empty partition set) while it is absent or not a fleet."""
    try:
        return [c.name for c in clusters_in(Path(FleetSettings().source_dir))]
    except FleetError:
        return []


clusters = StaticPartitionsDefinition(_cluster_names())


@asset(partitions_def=clusters, group_name="fleet",
       description="One cluster's nightly: its warehouse, report and exports (FLEET_OUT/<cluster>/).")
def cluster_nightly(context: AssetExecutionContext, fleet: FleetSettings) -> MaterializeResult:
    from analysis.commands import data_health
    from pipelines.fleet_runner import run_cluster

    name = context.partition_key
    out = Path(fleet.out_dir) / name
    run = run_cluster(Cluster(name, Path(fleet.source_dir) / name), warehouse_of(Path(fleet.db_dir), name), out,
                       quiet=False, options={})
    context.log.info(run.text)
    if run.status == data_health.FAILED:
        raise Failure(description=f"cluster {name}: {run.status}", metadata={"summary": MetadataValue.md(run.text)})
    return MaterializeResult(metadata={"status": run.status, "exit_code": run.exit_code,
                                       "report": MetadataValue.path(str(run.report)) if run.report else None})


@asset(deps=[cluster_nightly], group_name="fleet",
       description="FLEET_OUT/fleet/fleet-report.html: the clusters side by side, linking each cluster's report.")
def fleet_report(fleet: FleetSettings) -> MaterializeResult:
    from reports.fleet import cluster_reports, render_fleet_report

    out = Path(fleet.out_dir)
    path = render_fleet_report(Path(fleet.db_dir), out / "fleet", cluster_reports(out))
    return MaterializeResult(metadata={"path": MetadataValue.path(str(path))})


# One run per cluster partition; steps in subprocesses (the multiprocess executor), so a cluster's run never
# shares a Python process with another's.
fleet_nightly = define_asset_job("fleet_nightly", selection=[cluster_nightly], executor_def=multiprocess_executor)
fleet_report_job = define_asset_job("fleet_report_job", selection=[fleet_report], executor_def=multiprocess_executor)


@schedule(job=fleet_nightly, cron_schedule=os.environ.get("GOODPUT_FLEET_CRON", NIGHTLY_CRON))
def fleet_nightly_schedule(context: ScheduleEvaluationContext):
    """Every cluster's partition, each its own run: the run coordinator runs them side by side."""
    day = context.scheduled_execution_time.date().isoformat()
    for name in clusters.get_partition_keys():
        yield RunRequest(run_key=f"{day}-{name}", partition_key=name)


@run_status_sensor(run_status=DagsterRunStatus.SUCCESS, monitored_jobs=[fleet_nightly], request_job=fleet_report_job)
def fleet_report_after_a_cluster(context):
    """The fleet report again each time a cluster's nightly succeeds: it takes seconds, and is always current."""
    return RunRequest(run_key=context.dagster_run.run_id)


bound_native_threads()

defs = Definitions(assets=[cluster_nightly, fleet_report], jobs=[fleet_nightly, fleet_report_job],
                   schedules=[fleet_nightly_schedule], sensors=[fleet_report_after_a_cluster],
                   resources={"fleet": FleetSettings()})


def fleet_nightly_job():
    """The resolved fleet_nightly job, for ``reconstructable`` (a run whose steps are subprocesses loads it)."""
    return defs.resolve_job_def("fleet_nightly")


def fleet_report_run_job():
    return defs.resolve_job_def("fleet_report_job")
