"""The goodput Dagster code location (loaded by workspace.yaml / `dagster dev`)."""
from __future__ import annotations

from dagster import Definitions, in_process_executor

from analysis.threads import bound_native_threads

from assets.graph import found
from assets.resources import build_resources
from pipelines.schedules import new_files_sensor, nightly, nightly_schedule, refresh

# Every asset and check the assets/ modules define (assets/graph.py), the day-partitioned ones apart: a
# run materialises all_assets, then one day of daily_assets (pipelines/runner.py).
_assets, _checks = found()
all_assets = [a for a in _assets if a.partitions_def is None]
daily_assets = [a for a in _assets if a.partitions_def is not None]
_daily = {a.key for a in daily_assets}
all_checks = [c for c in _checks if not {s.asset_key for s in c.check_specs} & _daily]
daily_checks = [c for c in _checks if {s.asset_key for s in c.check_specs} & _daily]

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
