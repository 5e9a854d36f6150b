"""`goodput ettr`: expected ETTR and job MTTF for a training run."""
from __future__ import annotations

import json
from pathlib import Path

import click

from analysis import warehouse
from analysis.settings import MetricsConfig
from pipelines.cli.common import _db_option, given, option_rules, setting_option

# Imports inside the commands are deferred on purpose: `goodput --help` and each command load only what they use
# (Dagster, DuckDB, polars, torch take seconds).


@click.command()
@click.option("--gpus", type=click.IntRange(1), default=16384, show_default=True, help="Job size in GPUs (8 per node).")
@click.option("--failure-rate", type=click.FloatRange(0), default=6.5, show_default=True,
              help="Failures per 1,000 node-days of runtime (Meta RSC-1: 6.5, RSC-2: 2.34).")
@setting_option("--checkpoint-min", type=click.FloatRange(0, min_open=True), setting=(MetricsConfig, "dt_s"), per=60,
                help="Checkpoint interval Δt in minutes.")
@setting_option("--restart-min", type=click.FloatRange(0), setting=(MetricsConfig, "u0_s"), per=60,
                help="Restart overhead u0 in minutes.")
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
              help="Use the failure rate (cluster_failure_rate) and node size (node_gpus) the warehouse measured "
                   "(instead of --failure-rate; an explicit --gpus-per-node still wins).")
@_db_option
def ettr(gpus, failure_rate, checkpoint_min, restart_min, queue_min, runtime_days, monte_carlo, do_sweep, target,
         as_json, gpus_per_node, from_db, db):
    """Expected ETTR and job MTTF for a training run (Meta eq. 1), optionally checked by Monte Carlo.
    Options that would be ignored are refused (exit 2): --failure-rate with --from-db, --db without it,
    --target without --sweep, and a single run's options (--checkpoint-min, --queue-min, --runtime-days,
    --monte-carlo) with --sweep."""
    from analysis.derive import ettr as E
    from analysis.fmt import fmt_float, fmt_num

    single_run = ("checkpoint_min", "queue_min", "runtime_days", "monte_carlo")
    option_rules(
        conflicts=[(("failure_rate", "from_db"), "--from-db uses the failure rate the warehouse measured: give one"),
                   *((("do_sweep", name), "--sweep computes the checkpoint interval for every failure rate and job "
                      "size; --checkpoint-min, --queue-min, --runtime-days and --monte-carlo are a single run's")
                     for name in single_run)],
        needs=[("db", ("from_db",), "the warehouse is read only for its measured failure rate and node size"),
               ("target", ("do_sweep",), "the target ETTR is what --sweep finds checkpoint intervals for; a single "
                                         "run prints its expected ETTR")])
    if from_db:
        failure_rate, measured_per_node = _measured_rate(db or warehouse.default_db_path())
        gpus_per_node = gpus_per_node or measured_per_node
    gpus_per_node = gpus_per_node or E.GPUS_PER_NODE
    u0, dt, q = restart_min / 60, checkpoint_min / 60, queue_min / 60
    if do_sweep:
        import polars as pl

        rates = sorted({1.0, 2.34, 4.0, 6.5, 10.0} | ({round(failure_rate, 3)} if from_db or given("failure_rate") else set()))
        sizes = sorted({1024, 4096, 16384, 65536, 131072} | ({gpus} if given("gpus") else set()))
        rows = E.sweep(target, rates, sizes, u0, gpus_per_node)
        if as_json:
            click.echo(json.dumps({"target_ettr": target, "restart_min": restart_min, "sweep": rows}, indent=2))
            return
        rate = "r per 1,000 node-days"
        cells = [{rate: fmt_float(row["failures_per_1000_node_days"]), "size": f"{row['gpus']:,} GPUs",
                  "minutes": "unreachable" if row["checkpoint_minutes"] is None else fmt_num(row["checkpoint_minutes"], 1)}
                 for row in rows]
        table = pl.DataFrame(cells).pivot(on="size", index=rate, values="minutes")
        click.echo(f"checkpoint interval Δt in minutes for expected ETTR {fmt_float(target)} with "
                   f"{fmt_float(restart_min)}-minute "
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
    click.echo(f"job: {gpus:,} GPUs ({fmt_float(nodes, sep=True)} nodes), r = {fmt_float(failure_rate, 2, sep=True)} per 1,000 "
               f"node-days{' (measured)' if from_db else ''}, checkpoint {fmt_float(checkpoint_min)} min, restart "
               f"{fmt_float(restart_min)} min, queue {fmt_float(queue_min)} min"
               + (f", runtime {fmt_float(runtime_days)} days" if runtime_days else ""))
    click.echo(f"job MTTF:       {fmt_num(E.job_mttf_hours(nodes, r), 3)} h")
    click.echo(f"expected ETTR:  {fmt_num(value, 4)}" + ("" if valid else
               "   (outside the closed form's range: u0 + Δt/2 is not small against the MTTF;"
               + (" a run would rarely reach its next checkpoint, ETTR under 1%)" if stalled else
                  " the Monte Carlo below is the estimate)")))
    if mc is not None:
        click.echo(f"Monte Carlo:    {fmt_num(mc.mean, 4)}  (95% CI {fmt_num(mc.ci_low, 4)}-{fmt_num(mc.ci_high, 4)}, "
                   f"{mc.trials:,} runs of {fmt_float((runtime_h or 168) / 24)} days, {fmt_num(mc.mean_failures, 1)} "
                   "failures per run)")


def _measured_rate(db: Path) -> tuple[float, int]:
    """The warehouse's measured failures per 1,000 node-days and GPUs per node (`goodput run` builds
    cluster_failure_rate and node_gpus)."""
    import duckdb

    from analysis.hints import follow_up
    from analysis.derive import metrics

    try:
        con = warehouse.connect(db, read_only=True)
    except FileNotFoundError as exc:
        raise click.ClickException(str(exc)) from None
    try:
        row = con.execute("SELECT r_per_1000_node_days FROM cluster_failure_rate").fetchall()
        per_node = metrics.fleet_gpus_per_node(con)
    except duckdb.Error:
        raise click.ClickException(f"{db} has no measured failure rate yet: run `{follow_up('run', source='DIR', db=db)}` "
                                   "first") from None
    finally:
        con.close()
    if not row or row[0][0] is None:
        raise click.ClickException(f"{db} measured no failure rate (no runtime in its jobs)")
    return float(row[0][0]), per_node
