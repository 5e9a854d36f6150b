"""`goodput simulate`: a simulated cluster's logs and ground truth, or a fleet of clusters (one tree each)."""
from __future__ import annotations

from pathlib import Path

import click

# Imports inside the commands are deferred on purpose: `goodput --help` and each command load only what they use
# (Dagster, DuckDB, polars, torch take seconds).


def _fleet(ctx, param, value: str | None):
    """--fleet NAME:NODES,... checked before anything is simulated."""
    if value is None:
        return None
    from analysis.simulate.fleet import parse_fleet
    try:
        return parse_fleet(value)
    except ValueError as exc:
        raise click.BadParameter(str(exc), ctx, param) from None


@click.command()
@click.option("--out", "out", required=True, type=click.Path(file_okay=False, path_type=Path),
              help="New source directory to write (logs in the layout `run` reads, plus truth/).")
@click.option("--preset", type=click.Choice(["small", "rsc1", "rsc2"]), default=None,
              help="Cluster and workload shape [default: small]; small: 48 nodes, 14 days; rsc1: 2000 nodes; "
                   "rsc2: 1000 nodes.")
@click.option("--nodes", type=click.IntRange(4, 100_000), default=None, help="Override the preset's node count.")
@click.option("--fleet", callback=_fleet, metavar="NAME:NODES[:PROFILE][:SCHEDULER],...", default=None,
              help="Simulate a fleet instead: one tree per cluster (OUT/NAME/) and OUT/fleet.json, e.g. "
                   "rsc1:2000,rsc2:1000,lab:48:small,k8s:64:rsc1:kubernetes. PROFILE is a preset (rsc1, rsc2, small); "
                   "without it a name that is a preset takes its profile, others rsc1, rsc2, rsc1, ... by position. "
                   "SCHEDULER (slurm or kubernetes) is how that cluster's history is written, as --scheduler; "
                   "without it, --scheduler's. Not with --preset or --nodes.")
@click.option("--days", type=click.IntRange(1, 3650), default=None, help="Override the preset's length in days.")
@click.option("--seed", type=int, default=None,
              help="Random seed [default: 1]; the same seed writes the same files (a fleet's i-th cluster: seed + i).")
@click.option("--start", type=click.DateTime(formats=["%Y-%m-%d"]), default=None,
              help="First simulated day (UTC) [default: 2024-03-01].")
@click.option("--scheduler", type=click.Choice(["slurm", "kubernetes"]), default=None,
              help="How the cluster's history is written [default: slurm]: Slurm (slurm/, slurm_events/, XIDs in kernel/) or "
                   "Kubernetes (JobSets, Kueue Workloads and pods in kubernetes/, NVSentinel XID events in "
                   "node_health/); the same seed gives the same history and truth/ either way. With --fleet: "
                   "the scheduler of each cluster that names none.")
def simulate(out: Path, preset: str | None, nodes: int | None, fleet: list | None, days: int | None,
             seed: int | None, start, scheduler: str | None) -> None:
    """Simulate a GPU cluster (or a fleet of them) and write its logs and ground truth."""
    if fleet is not None:
        if preset is not None or nodes is not None:
            raise click.UsageError("--fleet and --preset/--nodes are mutually exclusive: --fleet gives each "
                                   "cluster's size (NAME:NODES) and picks its profile")
        _simulate_fleet(fleet, out, days, seed, start, scheduler)
        return
    from analysis.simulate.config import preset as make_preset
    from analysis.simulate.run import simulate as run_simulation

    cfg = make_preset(preset or "small", nodes=nodes, days=days, seed=seed, start=start, scheduler=scheduler)
    try:
        summary = run_simulation(cfg, out, progress=lambda msg: click.echo(msg, err=True))
    except FileExistsError as exc:
        raise click.ClickException(str(exc)) from None
    click.echo(f"wrote {out}: {summary['job_instances']:,} job instances, {summary['faults']} node faults, "
               f"{summary['lemons']} lemon nodes, in {summary['wall_s']} s")
    click.echo("states: " + ", ".join(f"{k} {v}" for k, v in sorted(summary["states"].items(), key=lambda kv: -kv[1])))


def _simulate_fleet(members: list, out: Path, days: int | None, seed: int | None, start,
                    scheduler: str | None) -> None:
    from analysis.simulate.fleet import plan, simulate_fleet

    fleet = plan(members, days=days, seed=seed, start=start, scheduler=scheduler)
    try:
        summaries = simulate_fleet(fleet, out, progress=lambda msg: click.echo(msg, err=True))
    except FileExistsError as exc:
        raise click.ClickException(str(exc)) from None
    for m, summary in zip(fleet, summaries):
        click.echo(f"wrote {out / m.name} ({m.profile} profile, {m.scheduler}, seed {m.cfg.seed}): "
                   f"{summary['job_instances']:,} "
                   f"job instances, {summary['faults']} node faults, {summary['lemons']} lemon nodes, "
                   f"in {summary['wall_s']} s")
    click.echo(f"wrote {out / 'fleet.json'}: {len(fleet)} clusters over {fleet[0].cfg.days} days")
