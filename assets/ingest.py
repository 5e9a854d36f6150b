"""Ingest assets: one per source of the registry (analysis/sources.py), each loading its folder's new or changed
files."""

import logging
from datetime import datetime, timezone
from pathlib import Path

from dagster import (AssetCheckExecutionContext, AssetCheckResult, AssetExecutionContext, AssetKey, MaterializeResult,
                     asset, asset_check)

from analysis import sql
from analysis.commands import diagnose
from analysis.display import printable
from analysis.ingest.engine import ingest_directory
from analysis.sources import SOURCES, Source
from assets.degrade import withheld_on_error
from assets.graph import writes
from assets.resources import LogSources, Warehouse
from assets.unchanged import UNCHANGED_FILES, replayed_while_unchanged, versioned_ingest

progress_log = logging.getLogger("goodput.ingest")
STARTED = "ingest_started"  # materialization metadata: naive UTC start of the ingest


def _ingest(context: AssetExecutionContext, warehouse: Warehouse, sources: LogSources, folder: str | None):
    def progress(outcome, i, n):
        line = f"{folder or 'other'}: [{i}/{n}] {outcome.status:12} {outcome.rows:>9} rows {outcome.rejects:>6} rejects  {printable(outcome.path)}"
        if outcome.status != "unchanged":  # a file not read again: counted, not logged (Dagster's log costs ms a line)
            context.log.debug(line)
            progress_log.info(line)
        elif i % 1000 == 0 or i == n:  # tens of thousands of unchanged job logs: a line per thousand says it moves
            progress_log.info(line)

    started = datetime.now(timezone.utc).replace(tzinfo=None)  # ingested_at of this run's files is at or after it
    with warehouse.connect() as con:
        summary = ingest_directory(con, Path(sources.source_dir), sources.options(),
                                   sources=[folder], progress=progress)
    outcomes = summary.outcomes
    return MaterializeResult(metadata={
        "files": len(outcomes),
        "new_or_changed": sum(o.status == "ok" for o in outcomes),
        UNCHANGED_FILES: sum(o.status == "unchanged" for o in outcomes),
        "rows_added": sum(o.rows for o in outcomes),
        "rejects_added": sum(o.rejects for o in outcomes),
        "problem_files": sum(o.status in ("unrecognised", "error") for o in outcomes),
        STARTED: started.isoformat(),
    })


def ingest_asset(source: Source):
    """A source's ingest asset and its two checks."""
    name, folder = source.asset, source.folder

    # A crash here (not a bad file: those are rejects or error rows) withholds this source only.
    @asset(name=name, group_name="ingest", description=f"Files under `{folder}/` ingested into the warehouse.",
           metadata=writes(*source.tables, "ingested_files", "rejects"))
    @withheld_on_error(step=name, missing=source.missing)
    @versioned_ingest(folder)
    def _asset(context: AssetExecutionContext, warehouse: Warehouse, sources: LogSources) -> MaterializeResult:
        return _ingest(context, warehouse, sources, folder)

    # Neither check blocks: the lines of a broken file are in rejects, never in a table, so everything
    # downstream is still right about what was read; the run is degraded (all rejected) or failed (lines
    # lost), and the report's banner says what is missing (analysis.commands.data_health).
    @asset_check(asset=name, name="lines_accounted",
                 description="Every line of the files read by the latest ingest is a stored row, a reject, a skipped "
                             "header/blank line or a merged continuation (else: data lost, the run fails).")
    @replayed_while_unchanged  # files as they were when it last looked: its outcome then
    def lines_accounted(context: AssetCheckExecutionContext, warehouse: Warehouse) -> AssetCheckResult:
        since = _ingest_started(context, name)
        with warehouse.connect() as con:
            bad = sql.query(con, "ingest/accounting_check_run", {"source": folder, "since": since})
        return _result(bad, diagnose.unaccounted(bad, folder) if bad.height else None, since)

    @asset_check(asset=name, name="not_all_rejected",
                 description="No file of this source had every line rejected (a wrong delimiter or format; the run "
                             "is degraded).")
    @replayed_while_unchanged
    def not_all_rejected(warehouse: Warehouse) -> AssetCheckResult:
        with warehouse.connect() as con:
            bad = sql.query(con, "ingest/source_all_rejected", {"source": folder})
        return _result(bad, diagnose.all_rejected(bad, folder) if bad.height else None)

    return _asset, lines_accounted, not_all_rejected


def _ingest_started(context: AssetCheckExecutionContext, asset_name: str) -> datetime:
    """When the latest materialization of the ingest asset started: the check
    covers the files it read, not the whole history (datetime.min when unknown)."""
    event = context.instance.get_latest_materialization_event(AssetKey(asset_name))
    meta = event.asset_materialization.metadata if event and event.asset_materialization else {}
    started = meta.get(STARTED)
    return datetime.fromisoformat(started.value) if started is not None else datetime.min


def _result(bad, description: str | None, since: datetime | None = None) -> AssetCheckResult:
    metadata = {"files_failing": bad.height, "first": bad["path"][0] if bad.height else ""}
    if since is not None:
        metadata["files_ingested_since"] = since.isoformat()
    return AssetCheckResult(passed=bad.height == 0, description=description, metadata=metadata)


@asset(group_name="ingest", description="Files in folders no parser reads, recorded as unrecognised.")
@versioned_ingest(None)
def unrecognised_files(context: AssetExecutionContext, warehouse: Warehouse, sources: LogSources) -> MaterializeResult:
    return _ingest(context, warehouse, sources, None)


# the sources declared when the definitions load
ingest_assets = []
ingest_checks = []
for _source in SOURCES.values():
    _a, *_checks = ingest_asset(_source)
    ingest_assets.append(_a)
    ingest_checks.extend(_checks)
