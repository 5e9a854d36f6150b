"""`goodput fleet`: what is done across the clusters' warehouses of `goodput run --fleet`."""
from __future__ import annotations

from pathlib import Path

import click

from pipelines.cli.common import _one_line

# Imports inside the commands are deferred on purpose: `goodput --help` loads only what it uses.

_DB_DIR = click.option("--db-dir", "db_dir", type=click.Path(file_okay=False, path_type=Path),
                       default=Path("data/fleet"), show_default=True,
                       help="The folder of the clusters' warehouses (<cluster>.duckdb), `run --fleet`'s --db-dir.")


@click.group("fleet")
def fleet_command() -> None:
    """Across the clusters of a fleet (`goodput run --fleet`): the Parquet lake and the fleet report."""


@fleet_command.command("export")
@_DB_DIR
@click.option("--parquet", "out", type=click.Path(file_okay=False, path_type=Path), required=True,
              help="Folder of the lake: OUT/table=<table>/cluster=<cluster>/part-0.parquet (hive-partitioned).")
def export_parquet_command(db_dir: Path, out: Path) -> None:
    """Write every cluster's tables as Parquet, partitioned by table and cluster, for Spark, Trino or DuckDB
    (read_parquet('OUT/table=jobs/*/*.parquet', hive_partitioning = true)). A file is replaced whole."""
    import duckdb

    from analysis.fleet.clusters import FleetError
    from analysis.fleet.lake import export_parquet

    try:
        written = export_parquet(db_dir, out)
    except (FleetError, duckdb.Error, OSError) as exc:
        raise click.ClickException(_one_line(exc)) from None
    clusters = {p.parent.name for p in written}
    click.echo(f"wrote {len(written)} Parquet files ({len({p.parent.parent.name for p in written})} tables, "
               f"{len(clusters)} clusters) under {out}")


@fleet_command.command("report")
@_DB_DIR
@click.option("--out", "out", type=click.Path(file_okay=False, path_type=Path), default=Path("out"),
              show_default=True, help="`run --fleet`'s --out: the clusters' reports are linked from OUT/fleet/.")
def report_command(db_dir: Path, out: Path) -> None:
    """Write the fleet report (OUT/fleet/fleet-report.html) from the clusters' warehouses as they are."""
    import duckdb

    from analysis.fleet.clusters import FleetError
    from reports.fleet import cluster_reports, render_fleet_report

    try:
        path = render_fleet_report(db_dir, Path(out) / "fleet", cluster_reports(out))
    except (FleetError, duckdb.Error, OSError) as exc:
        raise click.ClickException(_one_line(exc)) from None
    click.echo(f"Fleet report: {path.resolve()}")
