"""`goodput simulate`: a simulated cluster's logs and ground truth."""
from __future__ import annotations

from pathlib import Path

import click

# Imports inside the commands are deferred on purpose: `goodput --help` and each command load only what they use
# (Dagster, DuckDB, polars, torch take seconds).


@click.command()
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
