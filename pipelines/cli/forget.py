"""`goodput forget`: take files out of the warehouse."""
from __future__ import annotations

from pathlib import Path

import click

from analysis import warehouse
from analysis.display import printable
from pipelines.cli.common import _db_option

# Imports inside the commands are deferred on purpose: `goodput --help` and each command load only what they use
# (Dagster, DuckDB, polars, torch take seconds).


@click.command()
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

    from analysis.hints import follow_up
    from analysis.commands.preflight import warehouse_error
    from analysis.ingest.forget import UnknownPaths, forget as forget_files

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
        listing = follow_up("sql", "SELECT path FROM ingested_files", db=db)
        raise click.ClickException(f"not in the warehouse: {printable(', '.join(exc.paths))}; nothing was removed "
                                   f"(`{listing}` lists the files it holds)") from None
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
