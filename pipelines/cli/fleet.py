"""`goodput fleet`: what is done across the clusters' warehouses of `goodput run --fleet`."""
from __future__ import annotations

import os
from pathlib import Path

import click

from analysis.paths import FLEET_DB_DIR, RUN_OUT  # `goodput run --fleet`'s --db-dir and --out unasked
from pipelines.cli.common import _one_line, given

# Imports inside the commands are deferred on purpose: `goodput --help` loads only what it uses.

# One meaning per option name across the commands: --db-dir is the folder of the clusters' warehouses
# (<cluster>.duckdb) wherever it appears (`run --fleet`, `fleet export`, `fleet report`, `sql`); --fleet is the
# fleet's source folder (`run`).
_DB_DIR = click.option("--db-dir", "db_dir", type=click.Path(file_okay=False, path_type=Path),
                       default=FLEET_DB_DIR, show_default=True,
                       help="The folder of the clusters' warehouses (<cluster>.duckdb): `run --fleet`'s --db-dir.")


def fleet_warehouses(db_dir: Path) -> dict[str, Path]:
    """The cluster warehouses of DB_DIR by cluster, or a usage error naming --db-dir (exit 2), saying whether the
    folder was given or is the default, and the command that fills it."""
    from analysis.hints import follow_up
    from analysis.fleet.clusters import FleetError, warehouses_in

    which = f"{db_dir}" if given("db_dir") else f"{db_dir} (the default --db-dir)"
    fill = follow_up("run", fleet="DIR", db_dir=db_dir)
    if not Path(db_dir).is_dir():
        raise click.BadParameter(f"{which} is not a folder: give --db-dir, the folder of the clusters' warehouses "
                                 f"(<cluster>.duckdb) that `{fill}` wrote", param_hint="--db-dir")
    try:
        return warehouses_in(db_dir)
    except FleetError:
        raise click.BadParameter(f"{which} holds no cluster warehouse (<cluster>.duckdb): give --db-dir, the folder "
                                 f"`{fill}` wrote them to, or run that first", param_hint="--db-dir") from None


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

    fleet_warehouses(db_dir)
    try:
        written = export_parquet(db_dir, out)
    except (FleetError, duckdb.Error, OSError) as exc:
        raise click.ClickException(_one_line(exc)) from None
    clusters = {p.parent.name for p in written}
    click.echo(f"wrote {len(written)} Parquet files ({len({p.parent.parent.name for p in written})} tables, "
               f"{len(clusters)} clusters) under {out}")


@fleet_command.command("report")
@_DB_DIR
@click.option("--out", "out", type=click.Path(file_okay=False, path_type=Path), default=RUN_OUT,
              show_default=True, help="The fleet report goes to OUT/fleet/fleet-report.html.")
@click.option("--reports", "reports", type=click.Path(file_okay=False, path_type=Path), default=None,
              metavar="DIR", help="Where the clusters' own reports are, to link them: the --out of `run --fleet` "
                                  "(DIR/<cluster>/reports/) [default: --out, then ./out and $GOODPUT_OUT].")
def report_command(db_dir: Path, out: Path, reports: Path | None) -> None:
    """Write the fleet report (OUT/fleet/fleet-report.html) from the clusters' warehouses as they are, linking
    each cluster's newest report (by a path relative to OUT/fleet/); a cluster whose report is not found is
    named, with where it was looked for."""
    import duckdb

    from analysis.fleet.clusters import FleetError
    from reports.fleet import render_fleet_report

    clusters = fleet_warehouses(db_dir)
    roots = [reports] if reports is not None else _report_roots(out)
    found = {name: path for name in clusters if (path := _newest_report(roots, name)) is not None}
    try:
        path = render_fleet_report(db_dir, Path(out) / "fleet", found)
    except (FleetError, duckdb.Error, OSError) as exc:
        raise click.ClickException(_one_line(exc)) from None
    click.echo(f"Fleet report: {path.resolve()}")
    unlinked = sorted(set(clusters) - set(found))
    if unlinked:
        where = " or ".join(f"{r}/<cluster>/reports/" for r in roots)
        click.echo(f"Not linked (no report under {where}): {', '.join(unlinked)}; --reports DIR names the --out "
                   "`goodput run --fleet` wrote them to.", err=True)


def _report_roots(out: Path) -> list[Path]:
    """Where `run --fleet` may have written the clusters' reports: this --out, its default, Dagster's $GOODPUT_OUT."""
    roots = []
    for root in (out, RUN_OUT, os.environ.get("GOODPUT_OUT")):
        if root and not any(Path(root).resolve() == r.resolve() for r in roots):
            roots.append(Path(root))
    return roots


def _newest_report(roots: list[Path], cluster: str) -> Path | None:
    """The cluster's newest report (reliability-YYYY-MM-DD.html: the newest sorts last) in the first root that
    holds one."""
    for root in roots:
        found = sorted((root / cluster / "reports").glob("reliability-*.html"))
        if found:
            return found[-1]
    return None
