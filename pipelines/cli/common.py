"""What the commands share: the --db option, logging, one-line errors and crash logs."""
from __future__ import annotations

import logging
import os
import sys
from pathlib import Path

import click


def _db_option(f):
    return click.option("--db", "db", type=click.Path(dir_okay=False, path_type=Path), default=None,
                        help="DuckDB warehouse file [default: $GOODPUT_DB or ./data/warehouse.duckdb].")(f)


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
    from analysis.commands.preflight import one_line

    return one_line(exc)


def _setup_logging(quiet: bool) -> None:
    logging.basicConfig(level=logging.WARNING, format="%(message)s", stream=sys.stderr)
    logging.getLogger("goodput").setLevel(logging.WARNING if quiet else logging.INFO)
