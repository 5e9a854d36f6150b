"""Run every asset in-process (what `goodput run` and `goodput demo` do)."""
from __future__ import annotations

import logging
import os
import time
import warnings
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Callable

import polars as pl
from dagster import AssetCheckSeverity, AssetKey, DagsterInstance, materialize

from analysis import alerts, fingerprints, sql, warehouse
from analysis.commands import data_health
from analysis.hints import follow_up
from analysis.commands import diagnose
from analysis.commands.preflight import SourceError, check_out, check_rules, check_source, check_warehouse  # noqa: F401
from analysis.display import printable
from analysis.fleet import identity
from analysis.fleet.clusters import check_name
from assets.resources import ModelSettings, TelemetrySettings, build_resources
from assets.unchanged import UNCHANGED
from pipelines.definitions import all_assets, all_checks, daily_assets, daily_checks, defs

# Dagster's own console log would print stack traces for every failed or
# skipped step; the run summary says what failed instead, and the traces of
# real crashes go to ERRORS_LOG in --out.
progress_log = logging.getLogger("goodput.progress")
QUIET_DAGSTER = {"loggers": {"console": {"config": {"log_level": "CRITICAL"}}}}
ERRORS_LOG = "goodput-errors.log"
PROBLEMS_SHOWN = 10


# The exit codes of the statuses (analysis.commands.data_health.EXIT_CODES), by name for scripts and tests.
EXIT_OK, EXIT_FAILED, EXIT_DEGRADED = (data_health.EXIT_CODES[s] for s in (data_health.OK, data_health.FAILED,
                                                                           data_health.DEGRADED))
HEALTH_SHOWN = 10


@dataclass
class RunResult:
    """What a run did. ``status``: ok; degraded (the report is built, but a source, a step or an export
    was withheld: ``health`` says which and what is missing); failed (no report, or data lost)."""
    success: bool
    summary: pl.DataFrame
    problems: pl.DataFrame
    failed: list[str]
    warned: list[str]
    db: Path
    report_path: Path | None = None
    not_built: list[str] = field(default_factory=list)
    errors_log: Path | None = None
    health: pl.DataFrame = field(default_factory=lambda: pl.DataFrame(schema=data_health.COLUMNS))
    degraded: list[str] = field(default_factory=list)  # failed non-blocking checks: what they found
    unchanged: int = 0  # steps whose output is the last run's (not rebuilt: their inputs did not change)
    steps: int = 0  # steps materialized
    # the drain reasons, tickets and health messages no reason rule understood (the most frequent first)
    unclassified: pl.DataFrame = field(default_factory=pl.DataFrame)

    @property
    def status(self) -> str:
        if self.failed or not self.success or self.report_path is None:  # no report: nothing to read tonight
            return data_health.FAILED
        if self.degraded and not self.health.height:
            return data_health.DEGRADED
        return data_health.status(self.health)

    @property
    def exit_code(self) -> int:
        return data_health.EXIT_CODES[self.status]

    def report(self) -> str:
        with pl.Config(tbl_rows=50, tbl_cols=-1, tbl_width_chars=160, tbl_hide_dataframe_shape=True,
                       tbl_hide_column_data_types=True):
            lines = [f"Warehouse: {self.db}", str(self.summary)]
        for path, source, status, message in self.problems.head(PROBLEMS_SHOWN).iter_rows():
            lines.append(printable(f"  {status}: {path}: {message}"))
        if self.problems.height > PROBLEMS_SHOWN:
            lines.append(f"  ... and {self.problems.height - PROBLEMS_SHOWN} more: " + follow_up(
                "sql", "SELECT path, message FROM ingested_files WHERE status IN ('unrecognised', 'error')", db=self.db))
        lines += [f"WARNING: {w}" for w in self.warned]
        lines += [f"DEGRADED: {d}" for d in self.degraded]
        lines += [f"FAILED: {f}" for f in self.failed]
        if self.not_built:
            lines.append("Not rebuilt because of the failure(s) above (they keep their previous contents): "
                         + ", ".join(self.not_built))
        if self.errors_log:
            lines.append(f"Full tracebacks of what failed: {self.errors_log}")
        lines += self._health_lines()
        lines += self._unclassified_lines()
        if self.unchanged:
            lines.append(f"{self.unchanged} of {self.steps} steps unchanged since the last run (their inputs did not "
                         "change; `goodput run --rebuild` rebuilds everything).")  # the flag, not a line to paste
        if self.status == data_health.OK:
            lines.append("All assets materialized; all checks passed.")
        if self.report_path:
            lines.append(f"Report: {self.report_path.resolve()}")
        elif self.failed:
            lines.append("No report: fix the failure(s) above and run again.")
        else:
            lines.append("No report: the warehouse has no finished job yet (the report covers days with jobs).")
        lines.append(f"Run {self.status} (exit {self.exit_code}).")
        return "\n".join(lines)

    def _unclassified_lines(self) -> list[str]:
        if not self.unclassified.height:
            return []
        u = self.unclassified
        examples = "; ".join(f"'{t[:60]}' ({n})" for t, n in zip(u["text"], u["events"]))
        return [printable(f"Reasons not understood: {u['texts'][0]} distinct drain reason, ticket or health message text(s)"
                          f" ({u['all_events'][0]} events), e.g. {examples}"),
                "  add a rule for them under `reasons:` in your rules file (goodput run --rules FILE): "
                + follow_up("sql", "SELECT * FROM unclassified_reasons", db=self.db) + " lists them all"]

    def _health_lines(self) -> list[str]:
        if not self.health.height:
            return []
        lines = [f"Data health: {data_health.status(self.health)}: what this run could not use, and what is missing "
                 "because of it (also at the top of the report):"]
        for r in self.health.head(HEALTH_SHOWN).iter_rows(named=True):
            lines.append(printable(f"  {r['what']} ({r['severity']}): {r['reason']}"))
            if r["missing"]:
                lines.append(f"    missing: {r['missing']}")
        if self.health.height > HEALTH_SHOWN:
            lines.append(f"  ... and {self.health.height - HEALTH_SHOWN} more")
        return lines


def run_pipeline(source: Path, db: Path, out: Path, tz: str | None = None,
                 sacct_delimiter: str | None = None, boot_times: dict[str, str] | None = None,
                 rules_file: Path | None = None, warn: Callable[[str], None] | None = None,
                 models: ModelSettings | None = None, rebuild: bool = False, cluster: str | None = None,
                 record_steps: bool = True, telemetry: TelemetrySettings | None = None) -> RunResult:
    """Ingest and build what changed (everything with ``rebuild``). Raises SourceError, before any work, for
    what the user must fix first; ``warn`` hears each warning as soon as it is known (the result's summary
    lists them all: the command line prints that, so each warning once). ``cluster``: the cluster the source
    is (analysis/fleet/): the warehouse is named for it, and refused when it holds another's. ``record_steps``
    False: the steps are not recorded in $DAGSTER_HOME's instance (a fleet's clusters would share asset keys there:
    the fleet records one materialisation per cluster partition instead)."""
    source, db, out = Path(source), Path(db), Path(out)
    if cluster is not None:
        check_name(cluster)
    check_source(source, tz, sacct_delimiter, boot_times)
    check_rules(rules_file)
    check_out(out)
    check_warehouse(db)
    # One connection, so DuckDB's lock, from the first step to the last: a reader cannot take the file
    # between two steps and stall the next (it reads the snapshot this publishes at the end).
    with warehouse.held(db):
        if cluster is not None:
            with warehouse.connect(db) as con:
                identity.claim(con, cluster, db)
        if rebuild:
            _forget_built(db)
        return _build(source, db, out, warn or (lambda _message: None), tz, sacct_delimiter, boot_times, rules_file,
                      models, _instance(record_steps), telemetry)


def _build(source: Path, db: Path, out: Path, warn: Callable[[str], None], tz, sacct_delimiter, boot_times,
           rules_file, models, instance: DagsterInstance, telemetry: TelemetrySettings | None = None) -> RunResult:
    since = datetime.now(timezone.utc).replace(tzinfo=None)  # ingested_at is naive UTC
    resources = build_resources(db, source, out, tz, sacct_delimiter, boot_times, rules_file, models, telemetry)
    run = _materialize(all_assets, resources, instance)
    failed, traces = _step_failures(run)
    evaluations = list(run.get_asset_check_evaluations())
    materialized = list(run.get_asset_materialization_events())
    built = {e.asset_key.to_user_string() for e in materialized}
    not_built = [k.to_user_string() for a in all_assets for k in a.keys if k.to_user_string() not in built]
    con = warehouse.connect(db, read_only=True)
    try:
        warned, fatal = diagnose.coverage(con, source, since)
        cluster = identity.cluster_of(con)
        fatal = fatal or (identity.misfiled_sacct(con, cluster) if cluster else None)
    finally:
        con.close()
    for w in warned:
        warn(w)
    if fatal:
        failed.append(fatal)
    report = None
    # The report is built unless what it reads could not be: a withheld optional step, a broken source
    # or an export held back by its check degrade the run, they do not stop it.
    unbuilt_inputs = REPORT_INPUTS & set(not_built)
    day = _last_day(db) if not fatal and not unbuilt_inputs and not _blocking(evaluations) else None
    if day is not None:  # the day partition for the last day with data: its checks, then its report
        daily_run = _materialize(daily_assets, resources, instance, partition_key=day.isoformat())
        evaluations += list(daily_run.get_asset_check_evaluations())
        more, more_traces = _step_failures(daily_run)
        failed, traces = failed + more, traces + more_traces
        report = _report_path(daily_run)
        materialized += daily_run.get_asset_materialization_events()
    degraded = []
    for check in evaluations:
        if check.passed:
            continue
        text = diagnose.check_failure(check)
        if check.severity == AssetCheckSeverity.WARN:
            warned.append(text)
            warn(text)
        elif _blocking([check]) or check.check_name in DATA_LOST_CHECKS:
            failed.append(text)
        else:
            degraded.append(text)
    con = warehouse.connect(db, read_only=True)
    try:
        health = data_health.assess(con, day, data_health.recent_start(), resources["report_settings"].max_reject_rate)
        summary = sql.query(con, "ops/ingest_summary", {"since": since})
        problems = sql.query(con, "ops/file_problems")
        withheld = sql.query(con, "ops/withheld_steps_list").filter(pl.col("since") >= since)
        unclassified = (sql.query(con, "ops/unclassified_reasons_top", {"n": 3})
                        if sql.table_exists(con, "operator_reasons") else pl.DataFrame())
    finally:
        con.close()
    traces += [f"== step {r['step']} withheld: {r['reason']}\n{r['trace']}" for r in withheld.iter_rows(named=True)
               if r["trace"]]
    errors_log = None
    if traces:
        errors_log = out / ERRORS_LOG
        errors_log.write_text("\n\n".join(traces))
    if day is not None and report is None and not failed:
        failed.append("the report was not built")
    summary.write_csv(out / "ingest_summary.csv")
    unchanged = sum(bool(_meta(e, UNCHANGED)) for e in materialized)
    result = RunResult(not failed, summary, problems, failed, warned, db, report, not_built, errors_log, health,
                       degraded, unchanged, len(materialized), unclassified)
    # what SREs watch (docs/alerts.md): the metrics file and the new drains' alerts, once the run's status is known
    sent_to = resources["alert_settings"]
    for problem in alerts.publish(db, out, result.status, health, report, sent_to.alertmanager_url, sent_to.timeout_s):
        warn(problem)
        warned.append(problem)
    return result


def _forget_built(db: Path) -> None:
    con = warehouse.connect(db)
    try:
        fingerprints.forget_all(con)
    finally:
        con.close()


def _meta(event, name: str):
    value = event.materialization.metadata.get(name)
    return getattr(value, "value", value)


def _materialize(selection: list, resources: dict, instance: DagsterInstance, partition_key: str | None = None):
    """Run the ``selection`` of assets, with their checks. The run's job holds every asset of the definitions,
    whatever it selects: a step's fingerprint names its upstream steps from that graph (assets/unchanged.py), the
    graph a Dagster deployment's jobs hold."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # dagster beta/deprecation notices are not the user's concern
        return materialize([*all_assets, *all_checks, *daily_assets, *daily_checks], selection=selection,
                           resources=resources, partition_key=partition_key, raise_on_error=False,
                           instance=instance, run_config=QUIET_DAGSTER)


def _instance(recorded: bool = True) -> DagsterInstance:
    """$DAGSTER_HOME's instance when it is set (`make demo` sets data/dagster, so `make dev` shows the
    demo's materialisations in the asset catalog); an in-memory one otherwise (tests, one-off runs).
    Either way its steps are reported on stderr as they start and end (`goodput.progress`)."""
    home = os.environ.get("DAGSTER_HOME") if recorded else None
    if home:
        Path(home).mkdir(parents=True, exist_ok=True)
        (Path(home) / "dagster.yaml").touch()  # defaults: sqlite storage in DAGSTER_HOME (and no warning about it)
        instance = DagsterInstance.get()
    else:
        instance = DagsterInstance.ephemeral()
    return _reporting(instance)


SLOW_S = 2.0  # a step that took longer says when it finished, and how long it took
ASSET_STEPS = {k.to_user_string() for a in [*all_assets, *daily_assets] for k in a.keys}


def _reporting(instance: DagsterInstance) -> DagsterInstance:
    """Log each step's start, and the end of the slow ones: a phase of minutes (models, a big ingest)
    shows what it is doing. Dagster's own console logger stays quiet (QUIET_DAGSTER)."""
    handle, started = instance.handle_new_event, {}

    def handle_new_event(event, *args, **kwargs):
        step = getattr(event, "dagster_event", None)
        kind = step.event_type_value if step is not None else None
        if kind == "STEP_START":
            started[step.step_key] = time.perf_counter()
            if step.step_key in ASSET_STEPS:  # checks are quick and many: only their slow ends are told
                progress_log.info("  building %s ...", step.step_key)
        elif kind in ("STEP_SUCCESS", "STEP_FAILURE") and step.step_key in started:
            seconds = time.perf_counter() - started.pop(step.step_key)
            if seconds >= SLOW_S or kind == "STEP_FAILURE":
                progress_log.info("  %s %s after %.1f s", step.step_key, "done" if kind == "STEP_SUCCESS" else "FAILED",
                                  seconds)
        return handle(event, *args, **kwargs)

    instance.handle_new_event = handle_new_event
    return instance


def _step_failures(run) -> tuple[list[str], list[str]]:
    """One line per step that crashed, and its full trace for ERRORS_LOG."""
    lines, traces = [], []
    for event in run.all_events:
        if event.is_step_failure:
            described = diagnose.step_failure(event)
            if described:
                lines.append(described[0])
                traces.append(f"== {described[0]}\n{described[1]}")
    return lines, traces


# Checks on the forward-looking exports block the exports, not the report on the past: the run is degraded.
EXPORT_CHECKED = {"node_actions"}
BLOCKING_CHECKS = {(c.asset_key.to_user_string(), c.name) for d in [*all_checks, *daily_checks]
                   for c in d.check_specs if c.blocking}


def _report_inputs() -> set[str]:
    """Every asset the report reads, directly or not."""
    graph = defs.resolve_asset_graph()
    seen, todo = set(), [AssetKey("reliability_report")]
    while todo:
        for parent in graph.get(todo.pop()).parent_keys:
            if parent not in seen:
                seen.add(parent)
                todo.append(parent)
    return {k.to_user_string() for k in seen}


REPORT_INPUTS = _report_inputs()
DATA_LOST_CHECKS = {"lines_accounted"}  # lines in no table and no reject: the run failed, whatever else was built


def _blocking(evaluations) -> bool:
    """A blocking check failed on what the report publishes (one that guards an export degrades the run)."""
    return any(not e.passed and e.severity != AssetCheckSeverity.WARN
               and (e.asset_key.to_user_string(), e.check_name) in BLOCKING_CHECKS
               and e.asset_key.to_user_string() not in EXPORT_CHECKED for e in evaluations)


def _last_day(db: Path):
    return warehouse.read_scalar(db, "ops/last_data_day")


def _report_path(run) -> Path | None:
    for event in run.get_asset_materialization_events():
        meta = event.materialization.metadata
        if event.asset_key.to_user_string() == "reliability_report" and "path" in meta:
            return Path(meta["path"].value)
    return None
