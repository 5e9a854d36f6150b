"""Fabric port counters: cumulative counters differenced, and error deltas over thresholds as node events."""
from dagster import MaterializeResult, asset

from analysis.network import run as network_run
from assets.degrade import withheld_on_error
from assets.graph import writes
from assets.unchanged import unless_unchanged
from assets.resources import Warehouse


@asset(deps=["telemetry", "network_counters", "topology"], group_name="events",
       description="port_counter_deltas (InfiniBand error counters differenced through resets, wraps and "
                   "saturation) and their deltas over thresholds as node_events (source network).",
       metadata=writes("port_counter_deltas", "node_events"))
@unless_unchanged
@withheld_on_error
def port_counter_events(warehouse: Warehouse) -> MaterializeResult:
    with warehouse.connect() as con:
        return MaterializeResult(metadata=network_run.run(con))
