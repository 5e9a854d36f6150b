"""Stragglers: workers slower than their peers at the same step (analysis/derive/stragglers.py). Built with the
events, not the metrics: its node-origin episodes are node events (source straggler) that node history, incidents
and node actions read, and the goodput metrics count their cost."""
from dagster import MaterializeResult, asset

from analysis.derive import stragglers
from assets.graph import writes
from assets.resources import Warehouse
from assets.unchanged import unless_unchanged

# The pure build behind each asset, with the resources' defaults: tests and benchmarks run them (assets/pure_builds.py).
BUILDS = {"straggler_episodes": lambda con, s: stragglers.build(con)}


@asset(deps=["jobs", "telemetry", "job_logs"], group_name="events",
       description="Stragglers: each worker slower than its peers at the same step, its span, kind, cost in training "
                   "time and whether the node or the job is behind it (step times from telemetry and job logs); the "
                   "node's episodes also as node events (source straggler).",
       metadata=writes("straggler_episodes", "node_events"))
@unless_unchanged
def straggler_episodes(warehouse: Warehouse) -> MaterializeResult:
    with warehouse.connect() as con:
        n = stragglers.build(con)
    return MaterializeResult(metadata={"episodes": n})
