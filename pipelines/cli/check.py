"""`goodput check`: validate a source directory before the first run, writing nothing."""
from __future__ import annotations

import json
from dataclasses import asdict
from pathlib import Path

import click

# Imports inside the commands are deferred on purpose: `goodput --help` and each command load only what they use
# (Dagster, DuckDB, polars, torch take seconds).


@click.command("check")
@click.option("--source", "source", required=True, type=click.Path(file_okay=False, path_type=Path),
              help="Source directory to validate (the one `goodput run --source` would read).")
@click.option("--json", "as_json", is_flag=True, help="Print the verdicts as JSON.")
@click.option("--sample-rows", default=3, show_default=True, help="Parsed rows shown per folder.")
def check_command(source: Path, as_json: bool, sample_rows: int) -> None:
    """Read every file under SOURCE as `goodput run` would, write nothing, and say per folder: the formats
    detected, lines read, rows parsed (with samples), rejects with their reasons, hosts that ran no Slurm
    job. The source directory itself is judged by `goodput run`'s own rules: missing, empty or with no file
    in a source folder, it fails as the run would (exit 1, the same message); with no file in slurm/, which
    `goodput run` refuses, the other folders are read all the same and slurm/ is FAILED (exit 1). A
    folder is OK, WARNING (rejects that would degrade the run: over 2% of its lines and at least 20, the
    counts printed; hosts Slurm does not know; or files of headers only, no records) or FAILED (a file no
    parser reads or whose every line is rejected). Exit status 1 when the source or a folder failed."""
    from datetime import datetime

    from analysis.commands import diagnose
    from analysis.commands.preflight import REQUIRED, SourceError, check_source, missing_required
    from analysis.ingest.check import FolderCheck, as_text, check_directory
    from analysis.ingest.options import OptionsError

    try:
        options = check_source(source, required=False)  # the run's rules: a source it would not read fails here
        checks, warnings = check_directory(source, options, sample_rows=sample_rows,
                                           warnings=lambda con: diagnose.coverage(con, source, datetime(1970, 1, 1))[0])
    except (SourceError, FileNotFoundError, OptionsError) as exc:
        raise click.ClickException(str(exc).splitlines()[0]) from None
    missing = missing_required(source)  # `goodput run` refuses the source: the rest is read all the same
    if missing:
        checks.insert(0, FolderCheck(REQUIRED, "failed", files=0, lines=0, rows=0, rejects=0, formats=[],
                                     problems=[missing]))
        warnings = [w for w in warnings if "no Slurm accounting" not in w]  # said above
    if as_json:
        click.echo(json.dumps({"folders": [asdict(c) for c in checks], "warnings": warnings}, indent=2))
    else:
        click.echo(as_text(checks))
        for w in warnings:
            click.echo(f"WARNING: {w}")
        if missing:
            click.echo(f"FAILED: {missing}")  # what `goodput run` says, and its exit status
    if any(c.verdict == "failed" for c in checks):
        raise SystemExit(1)
