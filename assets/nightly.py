"""The nightly, day-partitioned part of the graph: per-day data-quality facts
with the checks that block the report, and the report itself."""
import os
from datetime import date
from pathlib import Path

from dagster import (AssetCheckResult, AssetCheckSeverity, AssetExecutionContext, DailyPartitionsDefinition,
                     MaterializeResult, MetadataValue, asset, asset_check)

from analysis import warehouse
from analysis.commands import data_health
from analysis.commands import diagnose
from analysis.ingest import daily
from analysis.sources import SOURCES
from assets.graph import writes
from assets.resources import LogSources, MetricsSettings, ReportSettings, TaxonomyConfig, Warehouse
from assets.unchanged import unless_unchanged

# Event and job time, by day. Ingestion stays file-incremental (a dump or a log
# rarely maps onto one day); these assets read the rows whose own time falls
# on the partition's day.
# They start at $GOODPUT_START_DATE, else at the warehouse's first job-end day (read when the definitions
# load), else 2020-01-01: the catalog should not offer years of empty days before the data.
daily_partitions = DailyPartitionsDefinition(start_date=os.environ.get("GOODPUT_START_DATE")
                                             or str(warehouse.first_data_day() or "2020-01-01"))
INGESTED = [*(s.asset for s in SOURCES.values()), "jobs", "node_events"]  # every ingest, and the tables it counts


def _day(context) -> date:
    return date.fromisoformat(context.partition_key)


@asset(partitions_def=daily_partitions, deps=INGESTED, group_name="nightly",
       description="Rows per source whose own time falls on the day (job ends, events, benchmark runs, samples).",
       metadata=writes("daily_source_volume"))
@unless_unchanged
def daily_source_volume(context: AssetExecutionContext, warehouse: Warehouse) -> MaterializeResult:
    with warehouse.connect() as con:
        volume = daily.store_daily_volume(con, _day(context))
    return MaterializeResult(metadata={row["source"]: int(row["rows"]) for row in volume.iter_rows(named=True)})


@asset_check(asset=daily_source_volume,
             description="A source that had rows on at least 6 of the previous 7 days has none today: input is "
                         "missing (the report is built, its banner says what lacks it).")
def sources_present(context, warehouse: Warehouse) -> AssetCheckResult:
    with warehouse.connect() as con:
        missing = daily.missing_sources(con, _day(context))
    return AssetCheckResult(passed=missing.height == 0,
                            description=diagnose.missing_sources(missing, _day(context)) if missing.height else None,
                            metadata={"missing": MetadataValue.text(", ".join(missing["source"].to_list()) or "none")})


@asset_check(asset=daily_source_volume,
             description="The share of rejected lines in each source's files ingested in the last day stays under the threshold "
                         "(the report is built, its banner names the files).")
def reject_rate_below_threshold(warehouse: Warehouse, report_settings: ReportSettings) -> AssetCheckResult:
    since = data_health.recent_start()
    with warehouse.connect() as con:
        over = data_health.rejecting(con, since, report_settings.max_reject_rate)
        problem = diagnose.high_reject_rate(con, over, since)
        rate = daily.reject_rate(con, since)
    return AssetCheckResult(passed=problem is None, description=problem,
                            metadata={"reject_rate": float(rate["rate"]), "rejects": int(rate["rejects"]),
                                      "sources_over": MetadataValue.text(", ".join(over["source"]) or "none")})


@asset_check(asset=daily_source_volume, description="A source far below its 7-day median (a warning, not a block).")
def volume_steady(context, warehouse: Warehouse) -> AssetCheckResult:
    with warehouse.connect() as con:
        drops = daily.volume_drops(con, _day(context))
    return AssetCheckResult(passed=drops.height == 0, severity=AssetCheckSeverity.WARN,
                            description=diagnose.volume_drops(drops, _day(context)) if drops.height else None,
                            metadata={"dropped": MetadataValue.text(", ".join(drops["source"].to_list()) or "none")})


@asset(partitions_def=daily_partitions, group_name="nightly",
       deps=["daily_source_volume", "job_run_ettr", "failure_rates", "goodput", "node_incidents", "failure_attribution",
             "node_actions"],
       description="The self-contained HTML reliability report for the day (and latest.html).")
# It reads every table, and its banner the data health of the moment (files ingested in the last day)
@unless_unchanged(upstream="all", extra=lambda con, day, kw: _health(con, date.fromisoformat(day),
                                                                     kw["report_settings"]).rows()
                  + [("price", repr(_price(kw["sources"])))])
def reliability_report(context: AssetExecutionContext, warehouse: Warehouse, report_settings: ReportSettings,
                       settings: MetricsSettings, taxonomy: TaxonomyConfig, sources: LogSources) -> MaterializeResult:
    from reports.render import render_with_headline

    tax = taxonomy.load()
    with warehouse.connect() as con:
        health = _health(con, _day(context), report_settings)
        path, numbers = render_with_headline(con, _day(context), Path(report_settings.out_dir) / "reports",
                                             settings.restart_min / 60, settings.checkpoint_min / 60,
                                             (tax.before_s, tax.after_s), taxonomy.crash_loop_min, tax.labels(), health,
                                             price=_price(sources))
    return MaterializeResult(metadata={"path": MetadataValue.path(str(path)), "bytes": path.stat().st_size,
                                       "data_health": data_health.status(health), **numbers})


def _price(sources: LogSources) -> dict | None:
    """goodput.yaml's price per GPU-hour (None: the report shows GPU-hours only); a bad file already failed the
    ingest, which names it."""
    try:
        return sources.options().price
    except ValueError:
        return None


def _health(con, day: date, report_settings: ReportSettings):
    return data_health.assess(con, day, data_health.recent_start(), report_settings.max_reject_rate)
