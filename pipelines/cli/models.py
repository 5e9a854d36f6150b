"""`goodput models` and `goodput export`: the node models and the files Slurm consumes."""
from __future__ import annotations

from datetime import datetime
from pathlib import Path

import click

from analysis import fingerprints, warehouse
from analysis.commands import data_health
from analysis.hints import follow_up
from analysis.nodes.cadence import KINDS
from analysis.paths import RUN_OUT
from analysis.settings import Cadence, ExportConfig, LemonConfig
from pipelines.cli.common import _db_option, setting_option

# Imports inside the commands are deferred on purpose: `goodput --help` and each command load only what they use
# (Dagster, DuckDB, polars, torch take seconds).


def _as_of(value: str | None) -> datetime | None:
    if value is None:
        return None
    try:
        return datetime.strptime(value, "%Y-%m-%d")
    except ValueError:
        raise click.BadParameter(f"expected a day such as 2024-03-31, got '{value}'", param_hint="--as-of") from None


def _open(db: Path | None, read_only: bool):
    import duckdb

    from analysis.commands.preflight import warehouse_error

    db = db or warehouse.default_db_path()
    if not Path(db).is_file():
        raise click.ClickException(warehouse.missing_warehouse(db))
    try:
        return warehouse.connect(db, read_only=read_only), db
    except duckdb.Error as exc:
        raise click.ClickException(warehouse_error(exc, db)) from None


@click.command("models")
@_db_option
@click.option("--as-of", "as_of", default=None, metavar="YYYY-MM-DD",
              help="Train and score with data strictly before this day (00:00 UTC) [default: the end of the data].")
@click.option("--labels", "labels", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="Lemon labels CSV (host,is_lemon,confirmed_at,component) [default: $GOODPUT_LABELS; none: "
                   "Meta-style thresholds decide].")
@setting_option("--window-days", type=click.IntRange(1, 365), setting=(LemonConfig, "window_days"),
                help="Trailing window of the lemon signals.")
@click.option("--retrain", "retrain", multiple=True, type=click.Choice(KINDS + ("all",)),
              help="Retrain this model now, whatever its age (repeatable). `telemetry` retrains the telemetry "
                   "detector and rescores the jobs it judges (named alone, the node models are left as they are) "
                   "[default: each model is retrained when $GOODPUT_RETRAIN_AFTER_DAYS "
                   f"({Cadence.retrain_after_days:g}) days of new data have passed or its input definition changed; "
                   "in between the saved one scores].")
@click.option("--force", "force", is_flag=True,
              help="Accept an --as-of outside the data's span (refused otherwise, exit 2).")
def models_command(db: Path | None, as_of: str | None, labels: Path | None, window_days: int,
                   retrain: tuple[str, ...], force: bool) -> None:
    """(Re)build lemon_features, lemon_scores, model_evaluation and node_actions
    as of a day, from data strictly before it, with the saved models unless
    they are due for retraining (or --retrain names them). Writes the
    warehouse; the files Slurm reads come from `goodput export`."""
    import os

    from analysis.nodes.lemon_scoring import as_of_problem
    from analysis.nodes.lemons import LabelsError
    from analysis.nodes.node_models import ModelsConfig, run_models
    from pipelines.cli.common import _setup_logging

    _setup_logging(quiet=False)  # training takes minutes: its progress on stderr (analysis.nodes.survival, ...)

    when = _as_of(as_of)
    labels = labels or (Path(os.environ["GOODPUT_LABELS"]) if os.environ.get("GOODPUT_LABELS") else None)
    if labels is not None and not labels.is_file():
        raise click.ClickException(f"no labels file at {labels}")
    retrain = frozenset(retrain)
    con, db = _open(db, read_only=False)
    try:
        problem = as_of_problem(con, when) if when is not None and not force else None
        if problem:
            raise click.BadParameter(problem, param_hint="--as-of")
        if retrain & {"telemetry", "all"}:
            _telemetry(con, db, retrain, alone=retrain == {"telemetry"})
        if retrain == {"telemetry"}:
            return
        cfg = ModelsConfig(lemon=LemonConfig(window_days=window_days), labels_path=labels,
                           model_dir=Path(db).resolve().parent / "models", cadence=_cadence(db, retrain))
        result = run_models(con, cfg, when)
        fingerprints.forget_steps(con, ["node_actions"])  # its tables are this command's now: the next run rebuilds
        late = data_health.benchmark_runs_late(con)
    except (LabelsError, ValueError) as exc:
        raise click.ClickException(str(exc)) from None
    finally:
        con.close()
        warehouse.published(db)  # what readers open while the next run writes
    _print_models(result, db)
    if late:
        click.echo(f"WARNING: {late}", err=True)


def _cadence(db: Path, retrain: frozenset):
    from assets.resources import retrain_after_days_default

    return Cadence(retrain_after_days_default(), retrain, Path(db).name)


def _state(name: str, state) -> str:
    how = "trained" if state.trained else f"loaded {state.version}"
    cpu = ", ".join(f"{k} {v:.1f} CPU-s" for k, v in state.cpu_s.items())
    return f"{name}: {how} ({state.reason}){'; ' + cpu if cpu else ''}."


def _telemetry(con, db: Path, retrain: frozenset, alone: bool) -> None:
    """Retrain the telemetry detector and rescore what it judges (analysis.telemetry.run)."""
    from analysis.telemetry import run as telemetry_run
    from assets.resources import TelemetrySettings

    s = TelemetrySettings()
    try:
        result = telemetry_run.run(con, s.config(), Path(db).resolve().parent / "models", s.max_train_jobs,
                                   s.min_train_jobs, s.epochs, lookback_days=s.lookback_days,
                                   cadence=s.cadence(str(db), retrain))
    except telemetry_run.NoTelemetry as exc:
        if alone:
            raise click.ClickException(f"cannot retrain the telemetry detector: {exc}") from None
        click.echo(f"Telemetry detector: not trained ({exc}).")
        return
    fingerprints.forget_steps(con, ["machine_alerts"])  # its tables are this command's now: the next run rebuilds
    click.echo(_state("Telemetry detector", result.model))
    click.echo(f"  saved: {result.model_path}; scored {result.jobs} job(s), {result.machine_hours:,.1f} machine-hours "
               "of telemetry. Attribution and the blocklist read its alerts, and its metrics are ranked on what "
               "attribution then blames, at the next `goodput run`.")


def _print_models(result, db: Path) -> None:
    lemon = result.lemon
    click.echo(f"As of {result.as_of:%Y-%m-%d} (UTC), data strictly before it.")
    how = "classifier trained on the labels" if lemon.method == "classifier" else \
        f"Meta-style thresholds ({lemon.why_thresholds})"
    if lemon.model is not None and not lemon.model.trained:
        how = "classifier saved from an earlier run"
    click.echo(f"Lemons: {int(lemon.scores['is_lemon'].sum())} of {lemon.scores.height} nodes, by the {how}.")
    if lemon.model is not None:
        click.echo(_state("Lemon classifier", lemon.model))
    if lemon.model_path:
        click.echo(f"Model {'saved' if lemon.model.trained else 'used'}: {lemon.model_path}")
    if lemon.evaluation.height:
        when = "" if lemon.model is None or lemon.model.trained else \
            f", when it was trained as of {lemon.evaluation['as_of'][0]:%Y-%m-%d}"
        click.echo(f"Evaluation (the last window held out{when}):")
        for model, metric, value in lemon.evaluation.select("model", "metric", "value").iter_rows():
            click.echo(f"  {model:18} {metric:20} {value:.3f}")
    click.echo(_state("Incident models", result.incident))
    if result.incident_evaluation.height:
        click.echo("Incident model, held-out later span (" + result.incident_evaluation["split"][0] + "):")
        table = result.incident_evaluation.pivot(on="metric", index="model", values="value")
        for row in table.iter_rows(named=True):
            click.echo(f"  {row['model']:32} " + "  ".join(f"{k} {v:.3f}" for k, v in row.items() if k != "model"))
    elif result.incident.trained:
        click.echo("Incident model: too little history to hold out a later span; node_risk uses what could be trained.")
    else:
        click.echo("Incident model: evaluated when it was trained (model_evaluation).")
    plan = result.validation_plan
    click.echo(f"Validation plan: {plan['host'].n_unique()} risky node(s), {plan.height} benchmark run(s).")
    counts = dict(result.actions.group_by("action").len().iter_rows())
    click.echo("Node actions: " + ", ".join(f"{a} {counts.get(a, 0)}" for a in ("drain_now", "drain_after_job", "watch")))
    click.echo(f"Write the files Slurm reads with: {follow_up('export', db=db, out='OUT')}")


@click.command("export")
@_db_option
@click.option("--out", "out", type=click.Path(file_okay=False, path_type=Path), default=RUN_OUT, show_default=True,
              help="The output folder, as for `goodput run`: blocklist.txt, drain.sh, blocklist.json and "
                   "validation_plan.json go in OUT/exports/, where `goodput run --out OUT` writes them.")
@click.option("--force", is_flag=True,
              help="Write even when more nodes would be drained than max_drain_share / max_drain_floor allow. "
                   "Needs --why: who (the OS user) and why are written in the export's header and blocklist.json, "
                   "and recorded in the warehouse (table export_overrides).")
@click.option("--why", "why", default=None, metavar="TEXT", help="Why --force: recorded with it.")
@setting_option("--platform", "platform", type=click.Choice(["auto", "slurm", "kubernetes", "both"]),
                setting=(ExportConfig, "platform"), help="The nodes' scheduler: slurm writes drain.sh (scontrol); kubernetes writes "
                                      "kubectl.sh (cordon and taint) and node_conditions.json; both writes all; auto "
                                      "is the scheduler whose jobs the warehouse holds (slurm/ or kubernetes/ read).")
@click.option("--no-execute", "no_execute", is_flag=True,
              help="kubectl.sh: drain_now taints NoExecute (the pods that do not tolerate it are evicted) instead of "
                   "NoSchedule.")
@setting_option("--max-age", "max_age", type=click.IntRange(1, 24 * 366), setting=(ExportConfig, "max_age_hours"),
                metavar="HOURS", help="The scripts refuse to run once the export is older than this (their own "
                                    "--max-age overrides it; --stale-ok runs anyway).")
def export_command(db: Path | None, out: Path, force: bool, why: str | None, platform: str, no_execute: bool,
                   max_age: int) -> None:
    """Write the node_actions of the last `goodput models` / `goodput run` in OUT/exports/ as
    blocklist.txt (a Slurm hostlist for sbatch --exclude), drain.sh (scontrol:
    drain_after_job State=DRAIN, drain_now State=DOWN, resumes of the nodes goodput
    drained that were repaired and validated since), blocklist.json
    (schemas/blocklist.schema.json) and validation_plan.json (benchmarks per
    risky node, Anubis Alg. 1); for Kubernetes nodes kubectl.sh and
    node_conditions.json. goodput never runs the scripts: each is a dry run until
    --apply, and checks before it acts, every time it is run: its own age, each
    node's live state, and the drain cap (docs/node-exports.md)."""
    from datetime import timezone

    from analysis.fleet import identity
    from analysis.nodes import lifecycle
    from analysis.nodes.exports import (ExportOverride, LadderConfig, drain_excess, latest_actions, latest_plan,
                                        os_user, record_override, resolve_platform, slurm_out_of_service, unsafe_hosts,
                                        write_exports)
    from analysis.nodes.node_models import fleet_size
    from analysis.version import made_by

    out = out / "exports"  # one layout for every command's --out: OUT/exports/, as `goodput run` writes
    if why is not None and not why.strip():
        raise click.BadParameter("give a reason", param_hint="--why")
    if force and why is None:
        raise click.UsageError("--force needs --why TEXT: who forced the export and why are recorded")
    if why is not None and not force:
        raise click.UsageError("--why goes with --force")
    con, db = _open(db, read_only=True)
    try:
        actions, as_of = latest_actions(con)
        plan = latest_plan(con, as_of)
        fleet = fleet_size(con)
        slurm = slurm_out_of_service(con, as_of)
        cluster = identity.cluster_of(con)
        resume = lifecycle.resume_candidates(con)  # goodput's drains repaired and validated since: drain.sh resumes them
        platform = resolve_platform(con, platform)
    except ValueError as exc:
        raise click.ClickException(str(exc)) from None
    finally:
        con.close()
    cfg = LadderConfig()
    drains, limit, problem = drain_excess(actions, fleet, cfg)
    if problem and not force:
        raise click.ClickException(f"{problem}: check node_actions "
                                   f"({follow_up('sql', 'SELECT * FROM node_actions', db=db)}), "
                                   "then --force --why TEXT to write anyway")
    override = None
    if problem:  # forced: recorded in the warehouse before anything is written, or nothing is written
        override = ExportOverride(datetime.now(timezone.utc).replace(tzinfo=None, microsecond=0), os_user(),
                                  why.strip(), drains, limit, fleet, as_of, platform, str(Path(out).resolve()))
        writable, db = _open(db, read_only=False)
        try:
            record_override(writable, override)
        except Exception as exc:  # noqa: BLE001 - a lock held by a running `goodput run`, a read-only file
            raise click.ClickException(f"cannot record the override in {db}: {exc}; nothing written") from None
        finally:
            writable.close()
        click.echo(f"FORCED past the drain limit ({problem}) by {override.os_user}: {override.why} "
                   "(recorded in export_overrides)", err=True)
    elif force:
        click.echo("--force was not needed: the drains are within the limit; nothing recorded", err=True)
    try:
        paths = write_exports(actions, out, as_of, made_by(db), cfg, plan=plan, slurm=slurm, cluster=cluster,
                              resume=resume, platform=platform, no_execute=no_execute, fleet=fleet,
                              override=override, max_age_hours=max_age)
    except OSError as exc:
        raise click.ClickException(f"cannot write to {out}: {exc.strerror or exc}") from None
    for name, path in paths.items():
        click.echo(f"{name:20} {path}")
    skipped = unsafe_hosts(actions)
    if skipped:
        click.echo(f"WARNING: {len(skipped)} host name(s) are not plain host names and were left out: "
                   f"{', '.join(repr(h) for h in skipped[:5])}", err=True)
