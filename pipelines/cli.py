"""The `goodput` command line."""
from __future__ import annotations

import json
import logging
import os
import sys
from pathlib import Path

import click

from analysis import resources, sql, warehouse
from analysis.display import printable
from analysis.sources import IGNORED_FOLDERS, SOURCES
from pipelines import values

DEMO_SOURCE = resources.demo_source()


def _db_option(f):
    return click.option("--db", "db", type=click.Path(dir_okay=False, path_type=Path), default=None,
                        help="DuckDB warehouse file [default: $GOODPUT_DB or ./data/warehouse.duckdb].")(f)


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="goodput", message="goodput %(version)s")
def main() -> None:
    """goodput: why GPU jobs fail, which nodes are lemons, how much training time the fleet loses."""
    from analysis.threads import bound_native_threads

    bound_native_threads()  # the machine is shared: no spinning thread pools (analysis/threads.py)


@main.command()
@click.option("--source", "source", required=True, type=click.Path(path_type=Path),
              help=f"Source directory, a folder per source: {', '.join(s + '/' for s in SOURCES)} (only slurm/ is "
                   f"required; {' and '.join(s + '/' for s in IGNORED_FOLDERS)} are not ingested).")
@_db_option
@click.option("--out", "out", type=click.Path(file_okay=False, path_type=Path), default=Path("out"), show_default=True,
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
@click.option("-q", "--quiet", is_flag=True, help="Print only the summary, no per-file progress.")
def run(source: Path, db: Path | None, out: Path, tz: str | None, sacct_delimiter: str | None,
        boot_times: tuple[str, ...], rules: Path | None, rebuild: bool, quiet: bool) -> None:
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

    from pipelines.preflight import warehouse_error
    from pipelines.runner import SourceError, run_pipeline

    _setup_logging(quiet)
    boots = {}
    for item in boot_times:
        host, sep, when = item.partition("=")
        if not sep or not host or not when:
            raise click.BadParameter(f"expected HOST=TIME, got '{item}'", param_hint="--boot-time")
        boots[host] = when
    db = db or warehouse.default_db_path()
    try:
        result = run_pipeline(source, db, out, tz=tz,
                              sacct_delimiter=sacct_delimiter, boot_times=boots, rules_file=rules, rebuild=rebuild)
    except SourceError as exc:
        raise click.ClickException(_one_line(exc)) from None
    except duckdb.Error as exc:  # another process took the warehouse between the steps of the run
        raise click.ClickException(warehouse_error(exc, db)) from None
    except Exception as exc:  # noqa: BLE001 - a goodput bug outside the steps: one line, the trace in the log
        raise _crashed(exc, out) from None
    click.echo(result.report())
    sys.exit(result.exit_code)


def _me() -> str:
    """How this command was started, for hints the user can paste (`.venv/bin/goodput`, not a bare name
    that is not on PATH outside the venv)."""
    argv0 = Path(sys.argv[0])
    if argv0.name == "goodput" and argv0.exists():
        rel = os.path.relpath(argv0)
        return rel if "/" in rel and not rel.startswith("../..") else str(argv0)
    return "goodput"


def _crashed(exc: Exception, out: Path) -> click.ClickException:
    """One line for a crash outside the steps (theirs are in the summary); its traceback goes to
    OUT/goodput-errors.log, as the steps' do."""
    import traceback

    from pipelines.runner import ERRORS_LOG

    log = Path(out) / ERRORS_LOG
    try:
        log.parent.mkdir(parents=True, exist_ok=True)
        log.write_text(traceback.format_exc())
        where = f"the full traceback is in {log}"
    except OSError:
        where = "the traceback could not be written to " + str(log)
    return click.ClickException(f"goodput stopped on {type(exc).__name__}: {_one_line(exc)} ({where}; please "
                                "report it)")


def _one_line(exc: BaseException) -> str:
    from pipelines.preflight import one_line

    return one_line(exc)


@main.command()
@click.option("--out", "out", required=True, type=click.Path(file_okay=False, path_type=Path),
              help="New source directory to write (logs in the layout `run` reads, plus truth/).")
@click.option("--preset", type=click.Choice(["small", "rsc1", "rsc2"]), default="small", show_default=True,
              help="Cluster and workload shape; small: 48 nodes, 14 days; rsc1: 2000 nodes; rsc2: 1000 nodes.")
@click.option("--nodes", type=click.IntRange(4, 100_000), default=None, help="Override the preset's node count.")
@click.option("--days", type=click.IntRange(1, 3650), default=None, help="Override the preset's length in days.")
@click.option("--seed", type=int, default=None, help="Random seed [default: 1]; the same seed writes the same files.")
@click.option("--start", type=click.DateTime(formats=["%Y-%m-%d"]), default=None,
              help="First simulated day (UTC) [default: 2024-03-01].")
def simulate(out: Path, preset: str, nodes: int | None, days: int | None, seed: int | None, start) -> None:
    """Simulate a GPU cluster and write its logs and ground truth."""
    from analysis.simulate.config import preset as make_preset
    from analysis.simulate.run import simulate as run_simulation

    cfg = make_preset(preset, nodes=nodes, days=days, seed=seed, start=start)
    try:
        summary = run_simulation(cfg, out, progress=lambda msg: click.echo(msg, err=True))
    except FileExistsError as exc:
        raise click.ClickException(str(exc)) from None
    click.echo(f"wrote {out}: {summary['job_instances']:,} job instances, {summary['faults']} node faults, "
               f"{summary['lemons']} lemon nodes, in {summary['wall_s']} s")
    click.echo("states: " + ", ".join(f"{k} {v}" for k, v in sorted(summary["states"].items(), key=lambda kv: -kv[1])))


@main.command()
@click.option("--db", "db", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="DuckDB warehouse file, recreated on every demo [default: data/demo.duckdb].")
@click.option("--out", "out", type=click.Path(file_okay=False, path_type=Path), default=Path("out/demo"), show_default=True)
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
    from pipelines.resources import ModelSettings

    # The simulated demo cluster fails ~7x as often as a real fleet (to show
    # every failure kind in two weeks), so more of it needs draining at once.
    models = ModelSettings(max_drain_share=0.25) if not sample else None
    try:
        result = run_pipeline(source, db, out, models=models)
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

    me = _me()
    try:
        con = warehouse.connect(db, read_only=True)
        try:
            example = con.execute(sql.load("report/demo_example_failure")).fetchall()
        finally:
            con.close()
    except duckdb.Error:
        return "\nNo commands to try: the run did not build the failure causes they read (see below)."
    lines = [f"\nTry: {me} sql --db {db} \"SELECT cause, count(*) FROM job_failure_causes GROUP BY ALL\""]
    if example:
        lines.append(f"     {me} why --db {db} {example[0][0]}    # a job a {example[0][1]} failure killed")
    return "\n".join(lines)


@main.command("sql")
@_db_option
@click.option("--csv", "as_csv", is_flag=True, help="Print CSV instead of a table.")
@click.option("--json", "as_json", is_flag=True,
              help="Print a JSON list of records (every row; times in ISO 8601, as stored: the warehouse's are UTC).")
@click.option("--vertical", "-x", is_flag=True, help="One 'column: value' block per row (wide rows).")
@click.option("--max-rows", default=50, show_default=True, help="Rows shown in table and vertical mode.")
@click.option("--timeout", type=click.FloatRange(0), default=300, show_default=True,
              help="Stop the query after this many seconds (0: no limit).")
@click.argument("query")
def sql_command(db: Path | None, as_csv: bool, as_json: bool, vertical: bool, max_rows: int, timeout: float,
                query: str) -> None:
    """Run one ad-hoc read-only QUERY against the warehouse.

    Queries only (SELECT, WITH, SHOW, DESCRIBE, SUMMARIZE, EXPLAIN of a query);
    statements that write (COPY, EXPORT, CREATE, SET, ATTACH, INSTALL, ...) are
    refused, and a query reads the warehouse and no other file."""
    import polars as pl

    from pipelines.readonly import QueryRefused, run_query

    try:
        columns, rows = run_query(db or warehouse.default_db_path(), query, timeout=timeout)
    except QueryRefused as exc:
        raise click.ClickException(str(exc)) from None
    # Every value as text: DuckDB types polars cannot hold (intervals, unions,
    # huge decimals) still print.
    frame = pl.DataFrame({c: [None if r[i] is None else values.as_text(r[i]) for r in rows]
                          for i, c in enumerate(columns)}, schema={c: pl.Utf8 for c in columns})
    if as_json:  # typed values where JSON has them, ISO 8601 for times, text for the rest (decimals, ...)
        click.echo(json.dumps([{c: values.as_json(r[i]) for i, c in enumerate(columns)} for r in rows], indent=1))
        return
    if as_csv:
        click.echo(frame.write_csv().rstrip("\n"))
        return
    if vertical:
        width = max((len(c) for c in columns), default=0)
        for n, row in enumerate(frame.head(max_rows).iter_rows(named=True), start=1):
            click.echo(f"-[ row {n} ]" + "-" * max(0, width - 4))
            for c in columns:
                click.echo(f"{c:<{width}} | {'NULL' if row[c] is None else row[c]}")
        click.echo(f"({frame.height} rows{'' if frame.height <= max_rows else f', {max_rows} shown'})")
        return
    with pl.Config(tbl_rows=max_rows, tbl_cols=-1, tbl_width_chars=200, fmt_str_lengths=60,
                   tbl_hide_dataframe_shape=True, tbl_hide_column_data_types=True):
        click.echo(frame)
    click.echo(f"({frame.height} rows)")


@main.command()
@_db_option
@click.option("--rules", "rules", type=click.Path(dir_okay=False, exists=True, path_type=Path), default=None,
              help="Taxonomy override file (for the attribution window) [default: $GOODPUT_RULES].")
@click.option("--json", "as_json", is_flag=True, help="Print the explanation as JSON (times in UTC, ISO 8601).")
@click.argument("job_id")
def why(db: Path | None, rules: Path | None, as_json: bool, job_id: str) -> None:
    """Explain why JOB_ID failed: every instance, the events near its end, the primary cause and its rule."""
    import duckdb

    from analysis.attribution import explain_job
    from analysis.taxonomy import TaxonomyError, load
    from pipelines.explain import render
    from pipelines.preflight import warehouse_error

    db = db or warehouse.default_db_path()
    try:
        taxonomy = load(rules or os.environ.get("GOODPUT_RULES") or None)
        con = warehouse.connect(db, read_only=True)
    except (FileNotFoundError, TaxonomyError) as exc:
        raise click.ClickException(_one_line(exc)) from None
    except duckdb.Error as exc:
        raise click.ClickException(warehouse_error(exc, db)) from None
    try:
        instances = explain_job(con, job_id, taxonomy)
    except duckdb.CatalogException as exc:  # a table `goodput run` builds is missing: its run stopped before it
        import re

        missing = re.search(r"with name (\S+) does not exist", str(exc))
        raise click.ClickException(f"the warehouse has no {missing.group(1) if missing else 'table ' + _one_line(exc)}"
                                   " yet: the last `goodput run` did not build it (a step failed or was interrupted: "
                                   "its summary says which); run it again") from None
    except duckdb.Error as exc:
        raise click.ClickException(_one_line(exc)) from None
    finally:
        con.close()
    if not instances:
        raise click.ClickException(f"no job {job_id} in the warehouse (array tasks are 123_4, het components 123+1)")
    if as_json:
        from pipelines.explain import as_json as why_json
        click.echo(why_json(instances, taxonomy))
        return
    click.echo(render(instances, taxonomy))


@main.command()
@_db_option
@click.option("--dry-run", is_flag=True, help="Only list what would be removed.")
@click.argument("paths", nargs=-1, required=True)
def forget(db: Path | None, dry_run: bool, paths: tuple[str, ...]) -> None:
    """Remove files from the warehouse: every row, reject and ingest record of
    each PATH (a file as given or its absolute path, or a folder: every file
    below it), in one transaction. An unknown PATH removes nothing.

    For source files you deleted or that were bad. Derived tables (jobs,
    node_incidents, failure_attribution, job_runs, the metrics and reports)
    still count the forgotten files until the next `goodput run`, which
    rebuilds them from the raw tables. A forgotten file still in the source
    directory is read again by the next run: move it away first."""
    import duckdb

    from analysis.forget import UnknownPaths, forget as forget_files
    from pipelines.preflight import warehouse_error

    db = db or warehouse.default_db_path()
    if not Path(db).is_file():
        raise click.ClickException(warehouse.missing_warehouse(db))
    try:
        con = warehouse.connect(db, read_only=dry_run)
    except duckdb.Error as exc:
        raise click.ClickException(warehouse_error(exc, db)) from None
    try:
        done = forget_files(con, list(paths), dry_run=dry_run)
    except UnknownPaths as exc:
        raise click.ClickException(str(exc)) from None
    finally:
        con.close()
        if not dry_run:
            warehouse.published(db)  # what readers open while the next run writes
    verb = "Would remove" if dry_run else "Removed"
    click.echo(f"{verb} {done.files.height} file(s) from {db}: {done.rows:,} rows and {done.rejects:,} rejects.")
    for r in done.files.iter_rows(named=True):
        click.echo(f"  {printable(r['path'])}  ({r['source'] or 'unknown folder'}, {r['status']}: "
                   f"{r['rows'] or 0:,} rows, {r['rejects'] or 0:,} rejects)")
    if done.copies:
        click.echo(f"{len(done.copies)} file(s) recorded as copies of these are read by the next run if they still "
                   f"exist: {printable(', '.join(done.copies[:5]))}{' ...' if len(done.copies) > 5 else ''}")
    if done.still_on_disk:
        click.echo(f"Still on disk, so the next run reads again: {printable(', '.join(done.still_on_disk[:5]))}"
                   f"{' ...' if len(done.still_on_disk) > 5 else ''} (move or delete them first)")
    if not dry_run:
        click.echo("Derived tables (jobs, attribution, metrics, reports) still count these files until the next "
                   "`goodput run`, which rebuilds them from the raw tables.")


@main.command()
@click.option("--gpus", type=click.IntRange(1), default=16384, show_default=True, help="Job size in GPUs (8 per node).")
@click.option("--failure-rate", type=click.FloatRange(0), default=6.5, show_default=True,
              help="Failures per 1,000 node-days of runtime (Meta RSC-1: 6.5, RSC-2: 2.34).")
@click.option("--checkpoint-min", type=click.FloatRange(0, min_open=True), default=60, show_default=True,
              help="Checkpoint interval Δt in minutes.")
@click.option("--restart-min", type=click.FloatRange(0), default=5, show_default=True, help="Restart overhead u0 in minutes.")
@click.option("--queue-min", type=click.FloatRange(0), default=0, show_default=True,
              help="Mean queue time q after submission and after every interruption, minutes.")
@click.option("--runtime-days", type=click.FloatRange(0, min_open=True), default=None,
              help="Productive runtime R of the run [default: a long run, the u0/R term dropped].")
@click.option("--monte-carlo", is_flag=True,
              help="Also simulate the run (2,000 trials of --runtime-days, default 7) and print the mean with a 95% CI "
                   "(done unasked where the closed form is not valid).")
@click.option("--sweep", "do_sweep", is_flag=True,
              help="Print the checkpoint interval needed for --target ETTR by failure rate and job size (Meta Fig. 10).")
@click.option("--target", type=click.FloatRange(0, 1, min_open=True, max_open=True), default=0.9, show_default=True,
              help="Target expected ETTR for --sweep.")
@click.option("--json", "as_json", is_flag=True, help="Print the numbers as JSON.")
@click.option("--gpus-per-node", type=click.IntRange(1), default=None,
              help="GPUs per node, to count a job's nodes [default: 8, or the warehouse's with --from-db].")
@click.option("--from-db", is_flag=True,
              help="Use the failure rate (cluster_failure_rate) and node size (node_gpus) the warehouse measured.")
@_db_option
@click.pass_context
def ettr(ctx, gpus, failure_rate, checkpoint_min, restart_min, queue_min, runtime_days, monte_carlo, do_sweep, target,
         as_json, gpus_per_node, from_db, db):
    """Expected ETTR and job MTTF for a training run (Meta eq. 1), optionally checked by Monte Carlo."""
    from analysis import ettr as E

    if from_db:
        failure_rate, measured_per_node = _measured_rate(db or warehouse.default_db_path())
        gpus_per_node = gpus_per_node or measured_per_node
    gpus_per_node = gpus_per_node or E.GPUS_PER_NODE
    u0, dt, q = restart_min / 60, checkpoint_min / 60, queue_min / 60
    if do_sweep:
        import polars as pl

        given = lambda name: ctx.get_parameter_source(name) != click.core.ParameterSource.DEFAULT  # noqa: E731
        rates = sorted({1.0, 2.34, 4.0, 6.5, 10.0} | ({round(failure_rate, 3)} if from_db or given("failure_rate") else set()))
        sizes = sorted({1024, 4096, 16384, 65536, 131072} | ({gpus} if given("gpus") else set()))
        rows = E.sweep(target, rates, sizes, u0, gpus_per_node)
        if as_json:
            click.echo(json.dumps({"target_ettr": target, "restart_min": restart_min, "sweep": rows}, indent=2))
            return
        rate = "r per 1,000 node-days"
        cells = [{rate: row["failures_per_1000_node_days"], "size": f"{row['gpus']:,} GPUs",
                  "minutes": "unreachable" if row["checkpoint_minutes"] is None else f"{row['checkpoint_minutes']:,.1f}"}
                 for row in rows]
        table = pl.DataFrame(cells).pivot(on="size", index=rate, values="minutes")
        click.echo(f"checkpoint interval Δt in minutes for expected ETTR {target} with {restart_min:g}-minute "
                   "restarts, by job size (columns, GPUs) and failure rate r (rows, failures per 1,000 node-days); "
                   "unreachable: the restart overhead alone costs too much")
        with pl.Config(tbl_hide_dataframe_shape=True, tbl_hide_column_data_types=True, tbl_cols=-1,
                       tbl_width_chars=200):
            click.echo(table)
        return
    nodes, r = gpus / gpus_per_node, failure_rate / 1000
    runtime_h = runtime_days * 24 if runtime_days else None
    value = E.expected_ettr(nodes, r, u0, dt, q, runtime_h)
    valid = E.closed_form_valid(nodes, r, u0, dt)
    stalled = not E.reaches_checkpoints(nodes, r, u0, dt)
    # beyond the closed form's range the simulation is the estimate: run it unasked (unless it would not end)
    mc = E.monte_carlo_ettr(nodes, r, u0, dt, q, runtime_h or 24 * 7) if (monte_carlo or not valid) and not stalled else None
    if as_json:
        out = {"gpus": gpus, "gpus_per_node": gpus_per_node, "nodes": nodes, "failures_per_1000_node_days": failure_rate,
               "checkpoint_min": checkpoint_min, "restart_min": restart_min, "queue_min": queue_min,
               "runtime_days": runtime_days, "job_mttf_hours": E.job_mttf_hours(nodes, r), "expected_ettr": value,
               "closed_form_valid": valid, "reaches_checkpoints": not stalled}
        if mc is not None:
            out["monte_carlo"] = {"mean": mc.mean, "ci_low": mc.ci_low, "ci_high": mc.ci_high, "trials": mc.trials,
                                  "runtime_days": (runtime_h or 168) / 24, "mean_failures": mc.mean_failures}
        click.echo(json.dumps(out, indent=2))
        return
    click.echo(f"job: {gpus} GPUs ({nodes:g} nodes), r = {failure_rate:g} per 1,000 node-days, "
               f"checkpoint {checkpoint_min:g} min, restart {restart_min:g} min, queue {queue_min:g} min")
    click.echo(f"job MTTF:       {E.job_mttf_hours(nodes, r):.3f} h")
    click.echo(f"expected ETTR:  {value:.4f}" + ("" if valid else
               "   (outside the closed form's range: u0 + Δt/2 is not small against the MTTF;"
               + (" a run would rarely reach its next checkpoint, ETTR under 1%)" if stalled else
                  " the Monte Carlo below is the estimate)")))
    if mc is not None:
        click.echo(f"Monte Carlo:    {mc.mean:.4f}  (95% CI {mc.ci_low:.4f}-{mc.ci_high:.4f}, {mc.trials} runs of "
                   f"{(runtime_h or 168) / 24:g} days, {mc.mean_failures:.1f} failures per run)")


def _measured_rate(db: Path) -> tuple[float, int]:
    """The warehouse's measured failures per 1,000 node-days and GPUs per node (`goodput run` builds
    cluster_failure_rate and node_gpus)."""
    import duckdb

    from analysis import metrics

    try:
        con = warehouse.connect(db, read_only=True)
    except FileNotFoundError as exc:
        raise click.ClickException(str(exc)) from None
    try:
        row = con.execute("SELECT r_per_1000_node_days FROM cluster_failure_rate").fetchall()
        per_node = metrics.fleet_gpus_per_node(con)
    except duckdb.Error:
        raise click.ClickException(f"{db} has no measured failure rate yet: run `goodput run` first") from None
    finally:
        con.close()
    if not row or row[0][0] is None:
        raise click.ClickException(f"{db} measured no failure rate (no runtime in its jobs)")
    return float(row[0][0]), per_node


def _setup_logging(quiet: bool) -> None:
    logging.basicConfig(level=logging.WARNING, format="%(message)s", stream=sys.stderr)
    logging.getLogger("goodput").setLevel(logging.WARNING if quiet else logging.INFO)


def _register_model_commands() -> None:
    from pipelines.cli_check import check_command
    from pipelines.cli_criteria import criteria_command
    from pipelines.cli_models import export_command, models_command

    main.add_command(models_command)
    main.add_command(export_command)
    main.add_command(criteria_command)
    main.add_command(check_command)


_register_model_commands()


if __name__ == "__main__":
    main()
