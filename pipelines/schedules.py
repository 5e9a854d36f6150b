"""The nightly schedule and the new-file sensor."""
import hashlib
import os
from pathlib import Path

from dagster import (AssetSelection, RunRequest, SensorEvaluationContext, SkipReason, build_schedule_from_partitioned_job,
                     define_asset_job, sensor)

from analysis import warehouse
from analysis.ingest.engine import files_to_read
from analysis.package_files import demo_source
from analysis.sources import SOURCES

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
    changed = new_files(source, db)
    if not changed:
        return SkipReason("no new or changed files")
    assets = sorted({SOURCES[folder].asset for folder, _ in changed.values()})
    selection = (AssetSelection.assets(*assets).downstream() - AssetSelection.groups("nightly"))
    keys = selection.resolve(context.repository_def.asset_graph)
    run_key = hashlib.sha256(repr(sorted((k, s) for k, (_, s) in changed.items())).encode()).hexdigest()[:20]
    return RunRequest(run_key=run_key, asset_selection=sorted(keys), tags={"goodput/new_files": str(len(changed))})


def new_files(source: Path, db: Path) -> dict[str, tuple[str, str]]:
    """file key -> (its source folder, size:mtime_ns) of the files of a declared source a run would read now: the
    engine's rule (analysis.ingest.engine.files_to_read), never a second one. A folder no source reads has no
    ingest asset to run."""
    con = warehouse.connect(db, read_only=True) if db.exists() else None  # None: nothing ingested, all new
    try:
        todo = files_to_read(con, source)
    finally:
        if con is not None:
            con.close()
    out = {}
    for path, folder, key in todo:
        if folder in SOURCES:
            try:
                stat = path.stat()
            except OSError:
                continue
            out[key] = (folder, f"{stat.st_size}:{stat.st_mtime_ns}")
    return out
