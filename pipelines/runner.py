"""Run every asset in-process (what `goodput run` and `goodput demo` do)."""
from __future__ import annotations

import warnings
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path

import polars as pl
from dagster import AssetCheckSeverity, DagsterInstance, materialize

from analysis import sql, warehouse
from analysis.ingest import discover
from analysis.options import load_options
from pipelines.definitions import all_assets, all_checks, daily_assets, daily_checks
from pipelines.resources import LogSources, MetricsSettings, ReportSettings, TaxonomyConfig, Warehouse

QUIET_DAGSTER = {"loggers": {"console": {"config": {"log_level": "WARNING"}}}}


class SourceError(ValueError):
    pass


@dataclass
class RunResult:
    success: bool
    summary: pl.DataFrame
    problems: pl.DataFrame
    failed: list[str]
    warned: list[str]
    db: Path
    report_path: Path | None = None

    def report(self) -> str:
        with pl.Config(tbl_rows=50, tbl_cols=-1, tbl_width_chars=160, tbl_hide_dataframe_shape=True,
                       tbl_hide_column_data_types=True):
            lines = [f"Warehouse: {self.db}", str(self.summary)]
        for path, source, status, message in self.problems.iter_rows():
            lines.append(f"  {status}: {path}: {message}")
        if self.warned:
            lines.append("WARNING: " + ", ".join(self.warned))
        if self.failed:
            lines.append("FAILED: " + ", ".join(self.failed))
        else:
            lines.append("All assets materialized; all checks passed.")
        if self.report_path:
            lines.append(f"Report: {self.report_path.resolve()}")
        elif not self.failed:
            lines.append("No report: the warehouse has no finished job yet (the report covers days with jobs).")
        return "\n".join(lines)


def run_pipeline(source: Path, db: Path, out: Path, tz: str | None = None,
                 sacct_delimiter: str | None = None, boot_times: dict[str, str] | None = None,
                 rules_file: Path | None = None) -> RunResult:
    source = Path(source)
    if not source.is_dir():
        raise SourceError(f"source directory {source} does not exist")
    if not discover(source):
        raise SourceError(f"source directory {source} holds no files (expected slurm/, kernel/, switch/, ... folders)")
    try:
        load_options(source, tz=tz, sacct_delimiter=sacct_delimiter, boot_times=boot_times)
    except (ValueError, TypeError) as exc:
        raise SourceError(f"bad options: {exc}") from None
    since = datetime.now(timezone.utc).replace(tzinfo=None)  # ingested_at is naive UTC
    if rules_file is not None:
        from analysis.taxonomy import TaxonomyError, load

        try:
            load(rules_file)
        except TaxonomyError as exc:
            raise SourceError(f"bad rules file: {exc}") from None
    resources = {"warehouse": Warehouse(db_path=str(db)),
                 "settings": MetricsSettings(), "report_settings": ReportSettings(out_dir=str(out)),
                 "taxonomy": TaxonomyConfig(rules_file=str(rules_file) if rules_file else TaxonomyConfig().rules_file),
                 "sources": LogSources(source_dir=str(source.resolve()), tz=tz, sacct_delimiter=sacct_delimiter,
                                       boot_times=boot_times or {})}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # dagster beta/deprecation notices are not the user's concern
        result = materialize([*all_assets, *all_checks], resources=resources, instance=DagsterInstance.ephemeral(),
                             raise_on_error=False, run_config=QUIET_DAGSTER)
    report = None
    evaluations = list(result.get_asset_check_evaluations())
    failed = [e.step_key or e.event_type_value for e in result.all_events if e.is_step_failure]
    day = _last_day(db) if not failed else None
    if day is not None:  # the day partition for the last day with data: its checks, then its report
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            daily_run = materialize([*daily_assets, *daily_checks], resources=resources, partition_key=day.isoformat(),
                                    instance=DagsterInstance.ephemeral(), raise_on_error=False, run_config=QUIET_DAGSTER)
        evaluations += list(daily_run.get_asset_check_evaluations())
        failed += [e.step_key or e.event_type_value for e in daily_run.all_events if e.is_step_failure]
        report = _report_path(daily_run)
    warned = []
    for check in evaluations:
        if not check.passed:
            name = f"check {check.asset_key.to_user_string()}.{check.check_name}"
            (warned if check.severity == AssetCheckSeverity.WARN else failed).append(name)
    con = warehouse.connect(db)
    try:
        summary = sql.query(con, "ingest_summary", {"since": since})
        problems = sql.query(con, "file_problems")
    finally:
        con.close()
    out.mkdir(parents=True, exist_ok=True)
    summary.write_csv(out / "ingest_summary.csv")
    return RunResult(result.success and not failed, summary, problems, failed, warned, db, report)


def _last_day(db: Path):
    con = warehouse.connect(db, read_only=True)
    try:
        return con.execute(sql.load("last_data_day")).fetchall()[0][0]
    finally:
        con.close()


def _report_path(run) -> Path | None:
    for event in run.get_asset_materialization_events():
        meta = event.materialization.metadata
        if event.asset_key.to_user_string() == "reliability_report" and "path" in meta:
            return Path(meta["path"].value)
    return None
