"""Tables derived from the raw ingest: jobs (sacct's and Kubernetes workloads'), job_steps, node_events with hosts
mapped."""

from dagster import AssetCheckResult, AssetCheckSeverity, MaterializeResult, asset, asset_check

from analysis import sql
from analysis.derive.jobs import build_jobs, map_switch_ports
from analysis.sources import DERIVED_EVENTS, SOURCES
from assets.graph import writes
from assets.resources import Warehouse
from assets.unchanged import replayed_while_unchanged, unless_unchanged

# The pure build behind each asset, with the resources' defaults: tests and benchmarks run them (assets/pure_builds.py).
BUILDS = {"jobs": lambda con, s: build_jobs(con), "node_events": lambda con, s: map_switch_ports(con)}


@asset(deps=["sacct_records", "k8s_objects"], group_name="slurm",
       description="One row per job instance (requeues numbered by `instance`), deduplicated across dumps, and one "
                   "per Kubernetes workload restart attempt; and job_steps.",
       metadata=writes("jobs", "job_steps", "job_days"))
@unless_unchanged
def jobs(warehouse: Warehouse) -> MaterializeResult:
    with warehouse.connect() as con:
        counts = build_jobs(con)
    return MaterializeResult(metadata=counts)


@asset_check(asset=jobs, description="Requeued instances of a job id follow one another and never overlap in time.")
@replayed_while_unchanged
def jobs_instances_sequential(warehouse: Warehouse) -> AssetCheckResult:
    with warehouse.connect() as con:
        overlaps = sql.scalar(con, "derive/jobs_overlapping_instances")
    return AssetCheckResult(passed=overlaps == 0, severity=AssetCheckSeverity.WARN,
                            metadata={"overlapping_instances": overlaps})


# every source whose rows land in node_events, topology (switch ports mapped to hosts) and the events goodput finds
@asset(deps=[*(s.asset for s in SOURCES.values() if "node_events" in s.tables), "topology", *DERIVED_EVENTS.values()],
       group_name="events", description="Kernel, switch, health, Slurm and job-log node events; switch ports mapped "
                                        "to hosts.",
       metadata=writes("node_events"))
@unless_unchanged
def node_events(warehouse: Warehouse) -> MaterializeResult:
    with warehouse.connect() as con:
        unmapped = map_switch_ports(con)
        total = sql.count(con, "node_events")
    return MaterializeResult(metadata={"events": total, "switch_events_unmapped": unmapped})
