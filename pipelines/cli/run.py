"""`goodput run` and `goodput demo`: every asset in-process (pipelines/runner.py)."""
from __future__ import annotations

import sys
from pathlib import Path

import click

from analysis import package_files, sql, warehouse
from analysis.paths import FLEET_DB_DIR, RUN_OUT
from analysis.sources import IGNORED_FOLDERS, SOURCES
from pipelines.cli.common import _crashed, _db_option, _one_line, _setup_logging, option_rules

# Imports inside the commands are deferred on purpose: `goodput --help` and each command load only what they use
# (Dagster, DuckDB, polars, torch take seconds).

DEMO_SOURCE = package_files.demo_source()


@click.command()
@click.option("--source", "source", type=click.Path(path_type=Path),
              help=f"Source directory, a folder per source: {', '.join(s + '/' for s in SOURCES)} (only slurm/ is "
                   f"required, or kubernetes/ on a Kubernetes cluster; {' and '.join(s + '/' for s in IGNORED_FOLDERS)} are not ingested).")
@_db_option
@click.option("--out", "out", type=click.Path(file_okay=False, path_type=Path), default=RUN_OUT, show_default=True,
              help="Directory for reports/ (the reliability report), exports/ (blocklist, drain.sh, criteria/), "
                   "ingest_summary.csv and goodput-errors.log (the tracebacks of steps that failed).")
@click.option("--tz", default=None, help="Time zone of naive timestamps in the logs (e.g. Europe/Paris) [default: UTC].")
@click.option("--sacct-delimiter", default=None,
              help="sacct field delimiter [default: detected from the header: '^|^', '|#', '|' or a tab; give a tab "
                   "as '\\t'].")
@click.option("--boot-time", "boot_times", multiple=True, metavar="HOST=TIME",
              help="Boot time (ISO 8601) of HOST, for raw dmesg/kmsg logs stamped in seconds since boot. Repeatable.")
@click.option("--rules", "rules", type=click.Path(dir_okay=False, exists=True, path_type=Path), default=None,
              help="Your taxonomy override file, merged over taxonomy/rules.yaml [default: $GOODPUT_RULES].")
@click.option("--rebuild", is_flag=True,
              help="Rebuild every table, model and report, even those whose inputs did not change since the last run.")
@click.option("--cluster", default=None, metavar="NAME",
              help="The cluster SOURCE is (Slurm's ClusterName): the warehouse is named for it and refused for another, "
                   "sacct dumps naming another cluster fail the run, and drain.sh targets it (scontrol -M).")
@click.option("--fleet", "fleet", type=click.Path(file_okay=False, path_type=Path), default=None,
              help="Instead of --source: the fleet's source folder, a folder per cluster (FLEET/<cluster>/slurm/...), "
                   "each run into DB_DIR/<cluster>.duckdb and OUT/<cluster>/, then the fleet report in OUT/fleet/.")
@click.option("--db-dir", "db_dir", type=click.Path(file_okay=False, path_type=Path), default=FLEET_DB_DIR,
              show_default=True, help="With --fleet: the folder of the clusters' warehouses (<cluster>.duckdb), "
                                      "as `fleet export`, `fleet report` and `sql` take it.")
@click.option("--jobs", "-j", type=click.IntRange(1, 64), default=1, show_default=True,
              help="With --fleet: how many clusters run at once (each in its own process; about one per 2 cores).")
@click.option("-q", "--quiet", is_flag=True, help="Print only the summary, no per-file progress.")
def run(source: Path | None, db: Path | None, out: Path, tz: str | None, sacct_delimiter: str | None,
        boot_times: tuple[str, ...], rules: Path | None, rebuild: bool, cluster: str | None, fleet: Path | None,
        db_dir: Path, jobs: int, quiet: bool) -> None:
    """Ingest everything under SOURCE and materialize every asset.

    Checked before any file is read: the source directory, its goodput.yaml and
    the options, the rules file, that --out is writable and that no other
    process holds the warehouse. Warns on folders goodput does not read,
    sacct dumps without job lines and hosts Slurm does not know.

    A step whose inputs (new files, settings, rules, code) did not change
    since the last run is not rebuilt: a rerun with no new file takes seconds.

    Exit 0: everything built, every check passed. Exit 3 (degraded): the report
    is built, but a source, a step or an export was withheld (its banner and
    the summary say what and why). Exit 1 (failed): no report, or lines lost."""
    import duckdb

    from analysis.commands.preflight import warehouse_error
    from analysis.fleet.clusters import FleetError, check_name
    from pipelines.runner import SourceError, run_pipeline

    per_cluster = ("--fleet names each cluster by its folder and its warehouse DB_DIR/<cluster>.duckdb: leave out "
                   "--db and --cluster")
    option_rules(conflicts=[(("source", "fleet"), "give either --source (one cluster) or --fleet (a folder per cluster)"),
                            (("fleet", "db"), per_cluster), (("fleet", "cluster"), per_cluster)],
                 needs=[("db_dir", ("fleet",), "one cluster's warehouse is --db"),
                        ("jobs", ("fleet",), "one cluster is one run")])
    if source is None and fleet is None:
        raise click.UsageError("give either --source (one cluster) or --fleet (a folder per cluster)")
    try:
        cluster = cluster and check_name(cluster)
    except FleetError as exc:
        raise click.BadParameter(str(exc), param_hint="--cluster") from None
    _setup_logging(quiet)
    boots = {}
    for item in boot_times:
        host, sep, when = item.partition("=")
        if not sep or not host or not when:
            raise click.BadParameter(f"expected HOST=TIME, got '{item}'", param_hint="--boot-time")
        boots[host] = when
    options = dict(tz=tz, sacct_delimiter=sacct_delimiter, boot_times=boots, rules_file=rules, rebuild=rebuild)
    if fleet is not None:
        _run_fleet(fleet, db_dir, out, jobs, quiet, options)
    db = db or warehouse.default_db_path()
    try:
        result = run_pipeline(source, db, out, cluster=cluster, **options)
    except (SourceError, FleetError) as exc:
        raise click.ClickException(_one_line(exc)) from None
    except duckdb.Error as exc:  # another process took the warehouse between the steps of the run
        raise click.ClickException(warehouse_error(exc, db)) from None
    except Exception as exc:  # noqa: BLE001 - a goodput bug outside the steps: one line, the trace in the log
        raise _crashed(exc, out) from None
    click.echo(result.report())
    sys.exit(result.exit_code)


def _run_fleet(fleet: Path, db_dir: Path, out: Path, jobs: int, quiet: bool, options: dict) -> None:
    from analysis.fleet.clusters import FleetError
    from pipelines.fleet_runner import run_fleet

    try:
        result = run_fleet(fleet, db_dir, out, jobs=jobs, quiet=quiet, **options)
    except FleetError as exc:
        raise click.ClickException(_one_line(exc)) from None
    except Exception as exc:  # noqa: BLE001 - as `run`
        raise _crashed(exc, out) from None
    click.echo(result.summary())
    sys.exit(result.exit_code)


DEMO_EPOCHS = 8  # the demo's telemetry detector training (issue 35: `make demo` under 40 s on 2 cores)


@click.command()
@click.option("--db", "db", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="DuckDB warehouse file, recreated on every demo [default: data/demo.duckdb].")
@click.option("--out", "out", type=click.Path(file_okay=False, path_type=Path), default=RUN_OUT / "demo", show_default=True)
@click.option("--sample", is_flag=True, help="Use the small hand-made source directory instead of a simulated cluster.")
@click.option("-q", "--quiet", is_flag=True, help="Print only the summary.")
def demo(db: Path | None, out: Path, sample: bool, quiet: bool) -> None:
    """Simulate a small cluster (preset small) and run the whole pipeline on it."""
    import shutil

    from analysis.simulate.config import preset as make_preset
    from analysis.simulate.run import simulate as run_simulation
    from pipelines.runner import SourceError, run_pipeline

    _setup_logging(quiet)
    db = db or warehouse.DEMO_DB
    source = DEMO_SOURCE
    db.unlink(missing_ok=True)  # every demo starts from an empty warehouse: the two sources never mix
    if not sample:
        source = out / "source"
        shutil.rmtree(source, ignore_errors=True)
        summary = run_simulation(make_preset("small"), source)
        click.echo(f"simulated {summary['job_instances']:,} job instances on 48 nodes over 14 days in {summary['wall_s']} s")
    click.echo(f"goodput demo: source {source}, warehouse {db}")
    from assets.resources import ModelSettings, TelemetrySettings

    # The simulated demo cluster fails ~7x as often as a real fleet (to show
    # every failure kind in two weeks), so more of it needs draining at once.
    models = ModelSettings(max_drain_share=0.25) if not sample else None
    # A newcomer waits in front of it: the telemetry detector trains DEMO_EPOCHS epochs, not the nightly's 30
    # (the same tables and report sections; the detector's quality is benched, not demoed: bench/detect_eval.py)
    try:
        result = run_pipeline(source, db, out, models=models, telemetry=TelemetrySettings(epochs=DEMO_EPOCHS))
    except SourceError as exc:
        raise click.ClickException(_one_line(exc)) from None
    except Exception as exc:  # noqa: BLE001 - as `run`
        raise _crashed(exc, out) from None
    click.echo(_demo_hints(db))
    click.echo(result.report())  # ends with the report's path and the run's status
    sys.exit(result.exit_code)


def _demo_hints(db: Path) -> str:
    """Commands to try on the demo's warehouse; none when the run did not build what they read (a step
    failed or was interrupted: the summary below says which)."""
    import duckdb

    from analysis.hints import follow_up

    try:
        con = warehouse.connect(db, read_only=True)
        try:
            example = con.execute(sql.load("report/demo_example_failure")).fetchall()
        finally:
            con.close()
    except duckdb.Error:
        return "\nNo commands to try: the run did not build the failure causes they read (see below)."
    lines = [f"\nTry: {follow_up('sql', 'SELECT cause, count(*) FROM job_failure_causes GROUP BY ALL', db=db)}"]
    if example:
        lines.append(f"     {follow_up('why', example[0][0], db=db)}    # a job a {example[0][1]} failure killed")
    return "\n".join(lines)
