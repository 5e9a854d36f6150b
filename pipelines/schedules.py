"""The nightly schedule and the new-file sensor."""
import hashlib
import os
from pathlib import Path

from dagster import (AssetSelection, RunRequest, SensorEvaluationContext, SkipReason, build_schedule_from_partitioned_job,
                     define_asset_job, sensor)

from analysis import sql, warehouse
from analysis.ingest.engine import discover
from analysis.sources import SOURCES
from analysis.resources import demo_source

NIGHTLY_HOUR = int(os.environ.get("GOODPUT_NIGHTLY_HOUR", "3"))

# Everything, one day-partition at a time: the schedule runs yesterday's.
nightly = define_asset_job("nightly", selection=AssetSelection.all(),
                           description="Ingest new files, rebuild the tables and metrics, check the day, write its report.")
nightly_schedule = build_schedule_from_partitioned_job(nightly, hour_of_day=NIGHTLY_HOUR, minute_of_hour=0,
                                                       name="nightly_schedule")
# What new files can change: their ingest asset and everything unpartitioned downstream.
refresh = define_asset_job("refresh_from_new_files",
                           selection=AssetSelection.groups("ingest", "slurm", "events", "attribution", "metrics", "models"),
                           description="Ingest the files the sensor found and rebuild what depends on them.")


@sensor(job=refresh, minimum_interval_seconds=300, description="Runs only what new or changed source files affect.")
def new_files_sensor(context: SensorEvaluationContext):
    source = Path(os.environ.get("GOODPUT_SOURCE", demo_source()))
    db = warehouse.default_db_path()
    if not source.is_dir():
        return SkipReason(f"source directory {source} does not exist")
    known = _known_files(db)
    changed = {}
    for path, folder in discover(source):
        if folder not in SOURCES:
            continue
        stat, key = path.stat(), str(path.resolve())
        size, ingested_at = known.get(key, (None, None))
        if size != stat.st_size or ingested_at is None or stat.st_mtime > ingested_at:
            changed[key] = (folder, f"{stat.st_size}:{stat.st_mtime_ns}")
    if not changed:
        return SkipReason("no new or changed files")
    assets = sorted({SOURCES[folder].asset for folder, _ in changed.values()})
    selection = (AssetSelection.assets(*assets).downstream() - AssetSelection.groups("nightly"))
    keys = selection.resolve(context.repository_def.asset_graph)
    run_key = hashlib.sha256(repr(sorted((k, s) for k, (_, s) in changed.items())).encode()).hexdigest()[:20]
    return RunRequest(run_key=run_key, asset_selection=sorted(keys), tags={"goodput/new_files": str(len(changed))})


def _known_files(db: Path) -> dict[str, tuple[int, float]]:
    """Ingested files: size and ingestion time (epoch seconds, UTC)."""
    if not db.exists():
        return {}
    con = warehouse.connect(db, read_only=True)
    try:
        rows = con.execute(sql.load("ops/sensor_known_files")).fetchall()
    finally:
        con.close()
    return {path: (size, ts) for path, size, ts in rows}
