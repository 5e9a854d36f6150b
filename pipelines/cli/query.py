"""`goodput sql` and `goodput why`: read the warehouse."""
from __future__ import annotations

import json
import os
from pathlib import Path

import click

from analysis import warehouse
from analysis.commands import values
from pipelines.cli.common import RenamedOptions, _db_option, _one_line, option_rules

# Imports inside the commands are deferred on purpose: `goodput --help` and each command load only what they use
# (Dagster, DuckDB, polars, torch take seconds).


@click.command("sql", cls=RenamedOptions, renamed={
    "--fleet": ("--db-dir", "--fleet is the fleet's source folder on `run`; the folder of its warehouses is --db-dir, "
                "as on `fleet export` and `fleet report`")})
@_db_option
@click.option("--csv", "as_csv", is_flag=True, help="Print CSV instead of a table.")
@click.option("--json", "as_json", is_flag=True,
              help="Print a JSON list of records (every row; times in ISO 8601, as stored: the warehouse's are UTC).")
@click.option("--vertical", "-x", is_flag=True, help="One 'column: value' block per row (wide rows).")
@click.option("--max-rows", default=50, show_default=True, help="Rows shown in table and vertical mode (--csv and "
                                                                 "--json print every row).")
@click.option("--timeout", type=click.FloatRange(0), default=300, show_default=True,
              help="Stop the query after this many seconds (0: no limit).")
@click.option("--db-dir", "db_dir", type=click.Path(file_okay=False, path_type=Path), default=None, metavar="DIR",
              help="The folder of the clusters' warehouses (<cluster>.duckdb, `run --fleet`'s --db-dir): query all of "
                   "them instead of one; each table holds all clusters' rows with a cluster column, <cluster>.<table> "
                   "is one cluster's. (--fleet, its old name here, still works.)")
@click.argument("query")
def sql_command(db: Path | None, as_csv: bool, as_json: bool, vertical: bool, max_rows: int, timeout: float,
                db_dir: Path | None, query: str) -> None:
    """Run one ad-hoc read-only QUERY against the warehouse.

    Queries only (SELECT, WITH, SHOW, DESCRIBE, SUMMARIZE, EXPLAIN of a query);
    statements that write (COPY, EXPORT, CREATE, SET, ATTACH, INSTALL, ...) are
    refused, and a query reads the warehouse and no other file. The table and
    -x print a missing value as NULL and floats with at most 4 decimals; --csv
    and --json carry every digit."""
    import polars as pl

    from analysis.commands.readonly import QueryRefused, run_fleet_query, run_query
    from pipelines.cli.fleet import fleet_warehouses

    option_rules(conflicts=[(("db", "db_dir"), "--db is one warehouse, --db-dir a folder of cluster warehouses: give one"),
                           (("as_csv", "as_json", "vertical"), "one output format"),
                           (("max_rows", "as_csv"), "CSV holds every row"),
                           (("max_rows", "as_json"), "JSON holds every row")])
    try:
        if db_dir is not None:
            fleet_warehouses(db_dir)
            columns, rows = run_fleet_query(db_dir, query, timeout=timeout)
        else:
            columns, rows = run_query(db or warehouse.default_db_path(), query, timeout=timeout)
    except QueryRefused as exc:
        raise click.ClickException(str(exc)) from None
    # Every value as text: DuckDB types polars cannot hold (intervals, unions,
    # huge decimals) still print.
    if as_json:  # typed values where JSON has them, ISO 8601 for times, text for the rest (decimals, ...)
        click.echo(json.dumps([{c: values.as_json(r[i]) for i, c in enumerate(columns)} for r in rows], indent=1))
        return
    if as_csv:
        frame = pl.DataFrame({c: [None if r[i] is None else values.as_text(r[i]) for r in rows]
                              for i, c in enumerate(columns)}, schema={c: pl.Utf8 for c in columns})
        click.echo(frame.write_csv().rstrip("\n"))
        return
    frame = pl.DataFrame({c: [values.as_cell(r[i]) for r in rows] for i, c in enumerate(columns)},
                         schema={c: pl.Utf8 for c in columns})
    if vertical:
        width = max((len(c) for c in columns), default=0)
        for n, row in enumerate(frame.head(max_rows).iter_rows(named=True), start=1):
            click.echo(f"-[ row {n} ]" + "-" * max(0, width - 4))
            for c in columns:
                click.echo(f"{c:<{width}} | {row[c]}")
        click.echo(f"({frame.height} rows{'' if frame.height <= max_rows else f', {max_rows} shown'})")
        return
    with pl.Config(tbl_rows=max_rows, tbl_cols=-1, tbl_width_chars=200, fmt_str_lengths=60,
                   tbl_hide_dataframe_shape=True, tbl_hide_column_data_types=True):
        click.echo(frame)
    click.echo(f"({frame.height} rows)")


@click.command()
@_db_option
@click.option("--rules", "rules", type=click.Path(dir_okay=False, exists=True, path_type=Path), default=None,
              help="Taxonomy override file (for the attribution window) [default: $GOODPUT_RULES].")
@click.option("--json", "as_json", is_flag=True, help="Print the explanation as JSON (times in UTC, ISO 8601).")
@click.argument("job_id", metavar="JOB_ID|HOST")
def why(db: Path | None, rules: Path | None, as_json: bool, job_id: str) -> None:
    """Explain why JOB_ID failed: every instance, the events near its end, the primary cause and its rule.
    Given a HOST instead: its availability, times out of service with the operator's reasons, incidents, floods
    of the same event as episodes, and what goodput says to do with it."""
    import duckdb

    from analysis.derive.attribution import explain_job
    from analysis.derive.taxonomy import TaxonomyError, load
    from analysis.commands.explain import render
    from analysis.commands import node_history
    from analysis.commands.preflight import warehouse_error

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
        node = None if instances or not node_history.known_host(con, job_id) else node_history.explain_node(con, job_id)
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
    if node is not None:
        click.echo(node_history.as_json(node) if as_json else node_history.render(node))
        return
    if not instances:
        raise click.ClickException(f"no job or host {job_id} in the warehouse (array tasks are 123_4, het components"
                                   " 123+1)")
    if as_json:
        from analysis.commands.explain import as_json as why_json
        click.echo(why_json(instances, taxonomy))
        return
    click.echo(render(instances, taxonomy))
