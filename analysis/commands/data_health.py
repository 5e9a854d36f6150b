"""What a run could not use, and what is missing because of it: the report's data-health banner, the
run summary and the exit code all read this one assessment of the warehouse.

A broken source (every line of a file rejected, a file no parser reads, today's files missing) degrades
the run: the steps that read it still run on what was loaded, and this says what the numbers lack. A step
that crashed on odd data is withheld (it keeps its previous contents, `withheld_steps`) and the steps
after it run on. Lines that no table and no reject accounts for are data lost: the ingest check
lines_accounted fails the run (pipelines.runner), whatever this assessment says."""
from __future__ import annotations

from datetime import date, datetime, timedelta, timezone

import duckdb
import polars as pl

from analysis import sources, sql
from analysis.ingest import daily
from analysis.settings import HealthConfig

# What is missing when a step is withheld (it crashed, or a blocking check stopped it).
MISSING_WITHOUT_STEP: dict[str, str] = {
    "machine_alerts": "machines that slow their jobs, seen only in telemetry, are not flagged",
    "detector_evaluation": "the telemetry detectors' evaluation keeps its previous contents",
    "port_counter_events": "link faults seen only in port counters are not attributed",
    "job_log_events": "failures seen only in the jobs' own logs are not attributed",
    "benchmark_criteria": "benchmark criteria and verdicts keep their previous contents",
    "criteria_exports": "the SuperBench rules and baseline are not written",
    "node_actions": "lemon scores, incident risk and node actions keep their previous contents",
    "node_exports": "the blocklist, drain.sh and validation plan are not written (the previous ones stay)",
}
MAX_REJECT_RATE = HealthConfig.max_reject_rate  # of a source's newly read lines: over it, the source degrades the run,
MIN_REJECTS = 20  # if at least this many lines were rejected (one odd line of a 12-line file is not a broken feed)
COLUMNS = {"what": pl.Utf8, "severity": pl.Utf8, "reason": pl.Utf8, "missing": pl.Utf8}
OK, DEGRADED, FAILED = "ok", "degraded", "failed"
# The exit code of each status, for a cron job or systemd unit (docs/operations.md#exit-codes); 2 is click's
# usage error.
EXIT_CODES = {OK: 0, FAILED: 1, DEGRADED: 3}


def recent_start() -> datetime:
    """Where "the files ingested in the last day" start (naive UTC, as ingested_at): the input that just arrived,
    whose reject rate is judged (an old bad file must not degrade every night)."""
    return datetime.now(timezone.utc).replace(tzinfo=None) - timedelta(days=1)


def withhold(con: duckdb.DuckDBPyConnection, step: str, reason: str, trace: str = "", missing: str | None = None) -> None:
    """Record that ``step`` did not run to the end this time; it keeps its previous contents."""
    sql.run(con, "ops/withheld_steps_set", {"step": step, "reason": reason, "trace": trace,
                                        "missing": missing or MISSING_WITHOUT_STEP.get(step, "")})


def release(con: duckdb.DuckDBPyConnection, step: str) -> None:
    sql.run(con, "ops/withheld_steps_clear", {"step": step})


def assess(con: duckdb.DuckDBPyConnection, day: date | None = None, recent: datetime | None = None,
           reject_limit: float = MAX_REJECT_RATE) -> pl.DataFrame:
    """One row per problem: ``what`` (a source folder or a step), severity, reason and what is missing
    because of it. ``day``: judge that day's missing sources (after daily_source_volume); ``recent``:
    sources whose files ingested since then had more than ``reject_limit`` of their lines rejected.
    Lines lost are not judged here: the ingest assets' lines_accounted check finds them, and fails the run."""
    rows = [*_source_rows(con), *_withheld_rows(con)]
    if not any(r[0] == "slurm/" for r in rows) and _no_jobs(con):
        rows.append(("slurm/", DEGRADED, "no job in the Slurm accounting: the report covers the nodes' history only",
                     sources.missing("slurm")))
    late = benchmark_runs_late(con)
    if late:
        rows.append(("benchmarks/", DEGRADED, late, LATE_RUNS_MISSING))
    if day is not None:
        rows += _missing_today(con, day)
    if recent is not None:  # a source already listed for a file that gave nothing is not listed twice
        listed = {r[0] for r in rows}
        rows += [r for r in _rejecting(con, recent, reject_limit) if r[0] not in listed]
    return pl.DataFrame(rows, schema=COLUMNS, orient="row")


def status(health: pl.DataFrame) -> str:
    """ok | degraded | failed: the worst severity."""
    if health.filter(pl.col("severity") == FAILED).height:
        return FAILED
    return DEGRADED if health.height else OK


def worst(statuses) -> str:
    """failed over degraded over ok (a fleet's status from its clusters')."""
    statuses = set(statuses)
    return FAILED if FAILED in statuses else DEGRADED if DEGRADED in statuses else OK


LATE_RUNS_MISSING = "their verdicts: a failed validation drains no node and is no lemon signal"


def benchmark_runs_late(con: duckdb.DuckDBPyConnection) -> str | None:
    """What is wrong when validation runs without a time in their results are dated by their files'
    modification time on or after the as-of day of the node actions (sql/ops/data_health_benchmark_runs_late.sql),
    so that every verdict of theirs is ignored; None when there are none (or no node actions yet)."""
    if not (sql.table_exists(con, "node_actions") and sql.table_exists(con, "benchmark_verdicts")):
        return None
    r = sql.query(con, "ops/data_health_benchmark_runs_late").row(0, named=True)
    if not r["runs"] or r["as_of"] is None:
        return None
    named = ", ".join(r["examples"]) + (", ..." if r["runs"] > len(r["examples"]) else "")
    return (f"{r['runs']} validation run(s) ({named}) carry no time in their results and are dated by their files' "
            f"modification time (from {r['first_time']:%Y-%m-%d %H:%M}), on or after the as-of day "
            f"{r['as_of']:%Y-%m-%d}: their verdicts are ignored ({r['failed_nodes']} node(s) failed in them); give "
            f"the time each ran in goodput.yaml: benchmark_run_times: {{{r['examples'][0]}: YYYY-MM-DDTHH:MM:SSZ}}")


def _no_jobs(con) -> bool:
    """The warehouse holds node history but no job (a source of node states, kernel logs or tickets alone)."""
    return not sql.table_exists(con, "jobs") or sql.scalar(con, "ops/data_health_jobs") == 0


def _source_rows(con) -> list[tuple]:
    rows = []
    for r in sql.query(con, "ops/data_health_files").iter_rows(named=True):
        folder = r["source"]
        rows.append((f"{folder}/", DEGRADED, r["reason"], sources.missing(folder)))
    return rows


def _withheld_rows(con) -> list[tuple]:
    return [(f"step {r['step']}", DEGRADED, r["reason"], r["missing"])
            for r in sql.query(con, "ops/withheld_steps_list").iter_rows(named=True)]


def _missing_today(con, day: date) -> list[tuple]:
    missing = daily.missing_sources(con, day)
    return [(f"{r['source']}/", DEGRADED,
             f"no rows on {r['judged_day']} (rows on {r['days_with_rows']} of the 7 days before): files missing or late",
             sources.missing(r["source"])) for r in missing.iter_rows(named=True)]


def rejecting(con: duckdb.DuckDBPyConnection, since: datetime | None, limit: float = MAX_REJECT_RATE) -> pl.DataFrame:
    """The one rule of rejects that degrade a run, for `goodput run` and `goodput check` alike: sources whose files
    ingested since ``since`` (None: every file, as `goodput check` reads a source) had more than ``limit`` of
    their lines rejected, and at least MIN_REJECTS of them. source, rejects, lines, and reason: the share and
    the counts against the limits, and the most frequent reject reason."""
    rates = sql.query(con, "ops/data_health_reject_rates",
                      {"since": since or datetime.min, "limit": limit, "min_rejects": MIN_REJECTS})
    read = f"read since {since:%Y-%m-%d %H:%M} UTC " if since is not None else ""
    return rates.select("source", "rejects", "lines", reason=pl.format(
        "{} of the {} lines " + read + "were rejected ({} lines; a source degrades the run over {} of its lines and "
        f"{MIN_REJECTS} lines), mostly: {{}}",
        (pl.col("rate") * 100).round(1).cast(pl.Utf8) + "%", pl.col("lines"), pl.col("rejects"),
        pl.lit(f"{limit:.1%}"), pl.col("reason")))


def _rejecting(con, since: datetime, limit: float) -> list[tuple]:
    return [(f"{r['source']}/", DEGRADED, r["reason"], sources.missing(r["source"]))
            for r in rejecting(con, since, limit).iter_rows(named=True)]
