"""Follow-up commands goodput prints for the user to paste (`goodput sql --db X "SELECT ..."`): one renderer, so
every hint names the program as it was started and repeats the options the user gave that the follow-up needs
(the warehouse --db, the fleet's --db-dir). An option equal to what the follow-up would take unasked (--db:
$GOODPUT_DB or data/warehouse.duckdb; --db-dir: data/fleet) is left out: pasted in the same shell, the line
reads the same warehouse either way."""
from __future__ import annotations

import os
import re
import shlex
import sys
from pathlib import Path

from analysis.paths import FLEET_DB_DIR, default_db_path
_PLACEHOLDER = re.compile(r"[A-Z][A-Z_]*(\.\.\.)?")  # PATH, DIR, JOB_ID, PATH...: for the user to fill in


def program() -> str:
    """How this command was started, for hints the user can paste (`.venv/bin/goodput`, not a bare name that is
    not on PATH outside the venv)."""
    argv0 = Path(sys.argv[0])
    if argv0.name == "goodput" and argv0.exists():
        rel = os.path.relpath(argv0)
        return rel if "/" in rel and not rel.startswith("../..") else str(argv0)
    return "goodput"


def _unasked(name: str) -> Path | None:
    """What the follow-up takes when the option is left out."""
    if name == "db":
        return default_db_path()
    if name == "db_dir":
        return FLEET_DB_DIR
    return None


def _same_path(a, b) -> bool:
    try:
        return Path(a).resolve() == Path(b).resolve()
    except (OSError, RuntimeError):
        return str(a) == str(b)


def quote(word: str) -> str:
    """A word as a POSIX shell reads it back: bare when safe, a query in double quotes (it may hold single ones)
    when nothing in it expands there, else single-quoted."""
    if _PLACEHOLDER.fullmatch(word) or shlex.quote(word) == word:
        return word
    if not re.search(r'["$`\\!]', word):
        return f'"{word}"'
    return shlex.quote(word)


def follow_up(command: str, *args, **options) -> str:
    """`goodput COMMAND --option VALUE ... ARGS`, to paste. ``options`` by their parameter names (db, db_dir,
    source, ...): None or False leaves one out, True is a flag, and --db / --db-dir are left out when they name
    what the follow-up would read unasked. Arguments in capitals (PATH, DIR) are placeholders, printed as they
    are."""
    words = [program(), *command.split()]
    for name, value in options.items():
        if value is None or value is False:
            continue
        flag = "--" + name.replace("_", "-")
        if value is True:
            words.append(flag)
            continue
        unasked = _unasked(name)
        if unasked is not None and _same_path(value, unasked):
            continue
        words += [flag, quote(str(value))]
    return " ".join(words + [quote(str(a)) for a in args])


def warehouse_of(con) -> Path | None:
    """The file a DuckDB connection has open (what a hint's --db must name when only the connection is at hand:
    the steps of a run), None for an in-memory one."""
    try:  # every row fetched: a result left open would fail the connection's next statement
        rows = con.execute("SELECT path FROM duckdb_databases() WHERE database_name = current_database()").fetchall()
    except Exception:  # noqa: BLE001 - a hint must never fail what it annotates
        return None
    return Path(rows[0][0]) if rows and rows[0][0] else None
