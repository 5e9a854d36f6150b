"""Ingest assets: one per source folder, each loading new or changed files."""

import logging
from pathlib import Path

from dagster import AssetCheckResult, AssetExecutionContext, MaterializeResult, asset, asset_check

from analysis import sql
from analysis.ingest import ingest_directory
from pipelines.resources import LogSources, Warehouse

progress_log = logging.getLogger("goodput.ingest")

# asset name -> source folder
INGEST_ASSETS = {
    "topology": "topology", "sacct_records": "slurm", "node_state_periods": "slurm_events",
    "kernel_events": "kernel", "switch_events": "switch", "health_results": "health",
    "benchmark_results": "benchmarks", "telemetry": "telemetry", "tickets": "tickets",
}


def _ingest(context: AssetExecutionContext, warehouse: Warehouse, sources: LogSources, folder: str | None):
    def progress(outcome, i, n):
        line = f"{folder or 'other'}: [{i}/{n}] {outcome.status:12} {outcome.rows:>9} rows {outcome.rejects:>6} rejects  {outcome.path}"
        context.log.debug(line)
        progress_log.info(line)

    with warehouse.connect() as con:
        summary = ingest_directory(con, Path(sources.source_dir), sources.options(),
                                   sources=[folder], progress=progress)
    outcomes = summary.outcomes
    return MaterializeResult(metadata={
        "files": len(outcomes),
        "new_or_changed": sum(o.status == "ok" for o in outcomes),
        "rows_added": sum(o.rows for o in outcomes),
        "rejects_added": sum(o.rejects for o in outcomes),
        "problem_files": sum(o.status in ("unrecognised", "error") for o in outcomes),
    })


def _make_ingest_asset(name: str, folder: str):
    @asset(name=name, group_name="ingest", description=f"Files under `{folder}/` ingested into the warehouse.")
    def _asset(context: AssetExecutionContext, warehouse: Warehouse, sources: LogSources) -> MaterializeResult:
        return _ingest(context, warehouse, sources, folder)

    checks = [_file_check(name, folder, "lines_accounted", "accounting_check",
                          "Every line read is a stored row, a reject, a skipped header/blank line or a merged continuation."),
              _file_check(name, folder, "not_all_rejected", "source_all_rejected",
                          "No file of this source had every line rejected (a wrong delimiter or format).")]
    return _asset, *checks


def _file_check(asset_name: str, folder: str, check_name: str, query: str, description: str):
    """A blocking check that fails when ``query`` lists any file of the source."""
    @asset_check(asset=asset_name, name=check_name, blocking=True, description=description)
    def _check(warehouse: Warehouse) -> AssetCheckResult:
        with warehouse.connect() as con:
            bad = sql.query(con, query, {"source": folder})
        return AssetCheckResult(passed=bad.height == 0, metadata={"files_failing": bad.height,
                                "first": bad["path"][0] if bad.height else ""})

    return _check


@asset(group_name="ingest", description="Files in folders no parser reads, recorded as unrecognised.")
def unrecognised_files(context: AssetExecutionContext, warehouse: Warehouse, sources: LogSources) -> MaterializeResult:
    return _ingest(context, warehouse, sources, None)


ingest_assets = []
ingest_checks = []
for _name, _folder in INGEST_ASSETS.items():
    _a, *_checks = _make_ingest_asset(_name, _folder)
    ingest_assets.append(_a)
    ingest_checks.extend(_checks)
