"""Job logs: NCCL, PyTorch, CUDA and Slurm lines of the jobs' own output as node events."""
from dagster import MaterializeResult, asset

from analysis.derive import joblogs
from assets.degrade import withheld_on_error
from assets.graph import writes
from assets.resources import Warehouse
from assets.unchanged import unless_unchanged

BUILDS = {"job_log_events": lambda con, s: joblogs.build_events(con)}  # (assets/pure_builds.py)


@asset(deps=["job_logs", "jobs", "topology"], group_name="events",
       description="Job-log lines (job_log_lines) placed on hosts (NCCL prefixes, rank maps, Slurm's block "
                   "distribution), times and job instances, as node_events (source app) with the peer they name.",
       metadata=writes("node_events", "job_log_jobs"))
@unless_unchanged
@withheld_on_error
def job_log_events(warehouse: Warehouse) -> MaterializeResult:
    with warehouse.connect() as con:
        return MaterializeResult(metadata=joblogs.build_events(con))
