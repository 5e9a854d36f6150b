"""`goodput check`: validate a source directory before the first run, writing nothing."""
from __future__ import annotations

import json
from dataclasses import asdict
from pathlib import Path

import click

# Imports inside the commands are deferred on purpose: `goodput --help` and each command load only what they use
# (Dagster, DuckDB, polars, torch take seconds).


@click.command("check")
@click.option("--source", "source", required=True, type=click.Path(exists=True, file_okay=False, path_type=Path),
              help="Source directory to validate (the one `goodput run --source` would read).")
@click.option("--json", "as_json", is_flag=True, help="Print the verdicts as JSON.")
@click.option("--sample-rows", default=3, show_default=True, help="Parsed rows shown per folder.")
def check_command(source: Path, as_json: bool, sample_rows: int) -> None:
    """Read every file under SOURCE as `goodput run` would, write nothing, and say per folder: the formats
    detected, lines read, rows parsed (with samples), rejects with their reasons, hosts that ran no Slurm
    job. A folder is OK, WARNING (over 1% of its lines rejected, or hosts Slurm does not know) or FAILED
    (a file no parser reads, or no rows at all). Exit status 1 when a folder failed."""
    from datetime import datetime

    from analysis.ingest.check import as_text, check_directory
    from analysis.ingest.options import OptionsError
    from analysis.commands import diagnose

    try:
        checks, warnings = check_directory(source, sample_rows=sample_rows,
                                           warnings=lambda con: diagnose.coverage(con, source, datetime(1970, 1, 1))[0])
    except (FileNotFoundError, OptionsError) as exc:
        raise click.ClickException(str(exc).splitlines()[0]) from None
    if as_json:
        click.echo(json.dumps({"folders": [asdict(c) for c in checks], "warnings": warnings}, indent=2))
    else:
        click.echo(as_text(checks) if checks else f"nothing to read under {source}")
        for w in warnings:
            click.echo(f"WARNING: {w}")
    if any(c.verdict == "failed" for c in checks):
        raise SystemExit(1)
