"""Checks `goodput run` makes before reading a single log: each problem a user
can fix (a bad option, a busy warehouse, an unwritable --out) is one line and a
non-zero exit now, not a traceback after the whole build."""
from __future__ import annotations

import os
import re
import tempfile
from pathlib import Path

import duckdb

from analysis import warehouse
from analysis.hints import follow_up
from analysis.display import printable
from analysis.ingest.contract import IngestOptions
from analysis.ingest.engine import discover
from analysis.ingest.one_file import link_refusal
from analysis.ingest.options import load_options
from analysis.sources import JOBS_FROM


class SourceError(ValueError):
    """Something the user must fix before the run can start; the message is one line."""


_LOCK = re.compile(r'Could not set lock on file .*?Conflicting lock is held in (?P<prog>\S+) \(PID (?P<pid>\d+)\)')


# What DuckDB says of a truncated or corrupt file (or one that is not a DuckDB file at all)
_DAMAGED = ("Could not read enough bytes", "not a valid DuckDB database file", "Corrupt database file",
            "does not match stored checksum")


def damaged_warehouse(exc: Exception, db: Path) -> str | None:
    """One line for a warehouse file that is damaged, with what to do; None for any other error."""
    text = str(exc)
    if not any(marker in text for marker in _DAMAGED):
        return None
    detail = text.splitlines()[0].removeprefix("IO Error: ")[:160]
    return (f"the warehouse {db} is damaged (truncated or corrupt) or not a DuckDB file ({detail}): restore it "
            f"from a backup, or move it aside (mv {db} {db}.damaged) and run `{follow_up('run', source='DIR', db=db)}` to "
            "rebuild it from the source files")


def warehouse_error(exc: Exception, db: Path) -> str:
    """One line for a warehouse that cannot be opened."""
    text = str(exc)
    damaged = damaged_warehouse(exc, db)
    if damaged:
        return damaged
    blocker = warehouse.file_in_the_way(db)
    if blocker is not None:
        return f"cannot create the warehouse {db}: {blocker} is a file, not a folder; give --db a path inside a folder"
    lock = _LOCK.search(text)
    if lock:
        return (f"the warehouse {db} is in use by another process ({Path(lock['prog']).name}, PID {lock['pid']}): "
                "wait for it to finish, or give another --db")
    if "lock" in text.lower():
        return f"the warehouse {db} is in use by another process: wait for it to finish, or give another --db"
    first = text.splitlines()[0] if text else type(exc).__name__
    return f"cannot open the warehouse {db}: {first}"


def check_warehouse(db: Path) -> None:
    """The warehouse opens for writing: no other process holds it, the file is a DuckDB file, its folder is writable."""
    try:
        warehouse.connect(db).close()
    except duckdb.Error as exc:
        raise SourceError(warehouse_error(exc, db)) from None
    except OSError as exc:
        blocker = warehouse.file_in_the_way(db)
        why = f"{blocker} is a file, not a folder; give --db a path inside a folder" if blocker else exc.strerror or exc
        raise SourceError(f"cannot create the warehouse {db}: {why}") from None


def check_out(out: Path) -> None:
    """--out (and its reports/ folder) can be created and written."""
    try:
        for folder in (out, out / "reports"):
            folder.mkdir(parents=True, exist_ok=True)
            with tempfile.NamedTemporaryFile(dir=folder, prefix=".goodput-write-test-"):
                pass
    except OSError as exc:
        raise SourceError(f"cannot write to --out {out}: {exc.strerror or exc}") from None


REQUIRED = "slurm"  # the source folder of jobs a source directory must have (docs/sources.md) ...
# ... or, on a Kubernetes cluster, kubernetes/: the jobs come from either (sources.JOBS_FROM)


def missing_required(source: Path, found: list | None = None) -> str | None:
    """Why SOURCE cannot be run for want of a source folder of jobs (slurm/, or kubernetes/ on a Kubernetes
    cluster, with a file in it), with the folders that were not read (a misnamed sacct/: "did you mean slurm/?");
    None when it has one. `goodput run` refuses such a source before reading it; `goodput check` fails it the
    same way, exit 1."""
    found = discover(source) if found is None else found
    if any(folder in JOBS_FROM for _, folder in found):
        return None
    from analysis.commands.diagnose import unknown_folders

    return (f"source directory {printable(source)} has no file in {REQUIRED}/ (sacct dumps), the one source goodput "
            "requires (or kubernetes/ on a Kubernetes cluster: pods and workloads): without jobs there are no "
            "failure rates, attribution, ETTR or goodput"
            + "".join(f"; {w}" for w in unknown_folders(source)))


def check_source(source: Path, tz: str | None = None, sacct_delimiter: str | None = None,
                 boot_times: dict | None = None, required: bool = True) -> IngestOptions:
    """The rules a source directory must meet before anything is read, for `goodput run` and `goodput check`
    alike (each a SourceError, exit 1): it exists, holds files, some in source folders, a file in slurm/ among
    them (``required``; `goodput check` reads the rest all the same and fails the source after), and its
    goodput.yaml and the options load. Returns the options."""
    if not source.is_dir():
        raise SourceError(f"source directory {printable(source)} does not exist")
    found = discover(source)
    if not found:
        raise SourceError(f"source directory {printable(source)} holds no files (expected slurm/, kernel/, switch/, ... folders)")
    if all(folder is None for _, folder in found):
        from analysis.commands.diagnose import unknown_folders

        links = [f"{printable(p.relative_to(source))}: {why}" for p, _ in found if (why := link_refusal(p, source))]
        raise SourceError(f"no file of {printable(source)} is in a source folder, so nothing would be read: "
                          + "; ".join(unknown_folders(source) + links))
    missing = missing_required(source, found) if required else None
    if missing:
        raise SourceError(missing)
    try:
        return load_options(source, tz=tz, sacct_delimiter=sacct_delimiter, boot_times=boot_times)
    except (ValueError, TypeError) as exc:
        raise SourceError(f"bad options: {one_line(exc)}") from None


def check_rules(rules_file: Path | str | None) -> None:
    """The taxonomy (shipped rules plus the override file, or $GOODPUT_RULES) loads."""
    from analysis.derive.taxonomy import TaxonomyError, load

    rules_file = rules_file or os.environ.get("GOODPUT_RULES") or None
    try:
        load(rules_file)
    except TaxonomyError as exc:
        raise SourceError(f"bad rules file: {one_line(exc)}") from None


def one_line(exc: BaseException | str) -> str:
    return " ".join(line.strip() for line in str(exc).splitlines() if line.strip())
