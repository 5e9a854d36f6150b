"""Ingest a source directory into the warehouse, one file per transaction.

Source layout (docs/sources.md): one folder per source below the source directory.
A file already ingested with the same content is skipped; a changed file has
its old rows replaced; a file whose content was already ingested under another
name (a rotated or re-compressed log) is recorded as a duplicate and adds
nothing. A file no parser reads is recorded as unrecognised, never skipped
silently.
"""
from __future__ import annotations

import logging
import os
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import duckdb
import polars as pl

from analysis import sql, warehouse
from analysis.display import utf8_path
from analysis.ingest import batch as ingest_batch
from analysis.ingest.contract import IngestOptions
from analysis.ingest.hosts import host_from_path
from analysis.ingest.one_file import (SIDECAR_SUFFIXES, FileOutcome, Prepared, _fingerprint, _run_time, file_key,
                                      ingest_file, link_refusal, unchanged_since_read)
from analysis.ingest.options import CONFIG_NAMES, load_options
from analysis.sources import IGNORED_FOLDERS, SOURCES

log = logging.getLogger(__name__)


@dataclass
class IngestSummary:
    outcomes: list[FileOutcome] = field(default_factory=list)


def discover(source_dir: Path, sources: list[str] | None = None) -> list[tuple[Path, str | None]]:
    """discover_files without the links."""
    return discover_files(source_dir, sources)[0]


def discover_files(source_dir: Path, sources: list[str] | None = None
                   ) -> tuple[list[tuple[Path, str | None]], set[Path]]:
    """Every data file below ``source_dir`` with its source (None: unknown folder), every symbolic
    link that is not followed (link_refusal) and every entry that is no regular file (a FIFO, socket or
    device): those are recorded, never read; and every link to a file the walk lists itself (linked_file):
    recorded as a duplicate of it. ``sources``: only the
    files of those source folders, and only those folders are walked (one source of a tree of
    thousands of job logs need not list them all), unless a symbolic link makes the whole tree matter.
    Also the set of those paths that are symbolic links or no regular files, known from the walk (no lstat
    per file later)."""
    # (None among sources: the files of no source folder, anywhere in the tree)
    folders = None if sources is None or not set(sources) <= set(SOURCES) else [source_dir / s for s in sources]
    if folders is not None and any(f.is_symlink() for f in folders):
        folders = None
    found = []
    tops = [source_dir] if folders is None else [f for f in folders if f.is_dir()]
    for top in tops:
        for rel, is_link in _walk(str(top), str(source_dir)):
            parts = rel.split(os.sep)
            if rel.endswith(SIDECAR_SUFFIXES) or len(parts) == 1 and parts[0] in CONFIG_NAMES:
                continue
            found.append((rel, parts[0] if len(parts) > 1 and parts[0] in SOURCES else None, is_link))
    # sorted as text, made paths once: pathlib costs microseconds a file, and a tree has tens of thousands
    order = {s: i for i, s in enumerate(SOURCES)}
    found.sort(key=lambda item: (order.get(item[1], len(order)), item[0]))
    found = [(source_dir / rel, source, is_link) for rel, source, is_link in found]
    links = {p for p, _, is_link in found if is_link}
    found = [(p, source) for p, source, _ in found]
    if folders is not None and links:  # a link's target may be in another folder
        everything, links = discover_files(source_dir)
        return [(p, s) for p, s in everything if s in sources], links
    if sources is not None:
        found = [(p, s) for p, s in found if s in sources]
    # (a link inside the tree to a file also listed is kept: prepare_file records it as a duplicate of that file)
    return found, links


def _walk(top: str, source_dir: str) -> Iterator[tuple[str, bool]]:
    """Paths relative to ``source_dir`` (and whether each is a symbolic link or no regular file) of the files
    below ``top``, of the symbolic links refused (link_refusal) and of the entries that are neither a file nor
    a folder (a FIFO, socket or device: listed to be recorded, never opened), with os.scandir: its entries know
    their type without a stat per file, which a nightly rerun over tens of thousands of unchanged job logs would
    otherwise pay several times.
    Hidden files and folders, and the ignored top-level folders, are skipped without being walked."""
    root = Path(source_dir)
    cut = len(os.path.join(source_dir, ""))  # entry.path is folder + name: the relative path is a slice
    stack = [top]
    while stack:
        folder = stack.pop()
        try:
            entries = list(os.scandir(folder))
        except OSError:  # unreadable or gone: like rglob, nothing listed below it
            continue
        for entry in entries:
            if entry.name.startswith(".") or folder == source_dir and entry.name in IGNORED_FOLDERS:
                continue
            rel = entry.path[cut:]
            if entry.is_symlink():  # a link (to a file, a folder, or nothing) is never walked through
                if _is_file(entry) or link_refusal(Path(entry.path), root):
                    yield rel, True
            elif entry.is_dir():
                stack.append(entry.path)
            elif _is_file(entry):
                yield rel, False
            else:  # a FIFO, socket or device (opening a FIFO would block the run): link_refusal says which
                yield rel, True


def _is_file(entry: os.DirEntry) -> bool:
    try:  # like Path.is_file: a link loop or a vanished target is no file, not an error
        return entry.is_file()
    except OSError:
        return False


# A batch is written in one transaction: per-file atomicity holds (a file's
# rows are all in or all out), and a source of 2,000 small per-host files pays
# for a few commits instead of 2,000. The batch is written once it holds this
# many files, rows or bytes (a day's sacct dump is ~1 KB a row in memory).
BATCH_FILES = 500
BATCH_ROWS = 1_000_000
BATCH_BYTES = 64 * 1024 * 1024


# Files whose stat is checked against the warehouse in one query (a rerun over thousands of unchanged files).
CHECK_FILES = 10_000


def _keys(files: list[tuple[Path, str | None]], source_dir: Path, links: set[Path]) -> list[str]:
    """file_key of each file, resolving the source directory once: the folders below it are real folders
    (discover does not walk into a linked folder), so only a link itself needs resolving."""
    root, prefix = source_dir.resolve(), os.path.join(str(source_dir), "")

    def under_root(path: Path) -> str:  # root / path.relative_to(source_dir), without pathlib's cost per file
        text = str(path)
        return os.path.join(root, text[len(prefix):]) if text.startswith(prefix) else str(root / path.relative_to(source_dir))

    return [file_key(p, source_dir) if p in links else utf8_path(under_root(p)) for p, _ in files]


def _known_files(con: duckdb.DuckDBPyConnection, files: list[tuple[Path, str | None]], keys: list[str],
                 source_dir: Path, options: IngestOptions, links: set[Path]) -> dict[str, dict | None]:
    """The ingested_files row of each file (None: it has none; sql/ingest/files_by_paths.sql, one query for them
    all), its 'unchanged' saying it need not be read (one_file.unchanged_since_read). A link, a file of no source
    or one that cannot be stat'ed is left out: prepare_file looks it up and says why."""
    rows = []
    for (path, source), key in zip(files, keys):
        if source is None or path in links:
            continue
        try:
            stat = path.stat()
        except OSError:
            continue
        rel = path.relative_to(source_dir)
        hint = host_from_path(rel)
        hint = utf8_path(hint) if hint else None
        run_time = _run_time(options, source, rel)
        rows.append((key, stat.st_size, stat.st_mtime_ns, _fingerprint(options, path, hint, run_time, source)))
    if not rows:
        return {}
    staged = pl.DataFrame(rows, schema={"path": pl.Utf8, "size_bytes": pl.Int64, "mtime_ns": pl.Int64,
                                        "fingerprint": pl.Utf8}, orient="row")
    found = sql.query_on(con, "ingest/files_by_paths", "staged_stats", staged)
    known: dict[str, dict | None] = dict.fromkeys(staged["path"])
    now = {key: (size, mtime_ns, fingerprint) for key, size, mtime_ns, fingerprint in rows}
    for row in found.iter_rows(named=True):  # one dict a file, not a line
        row["unchanged"] = row["status"] != "error" and unchanged_since_read(row, *now[row["path"]])
        known[row["path"]] = row
    return known


def _triaged(con: duckdb.DuckDBPyConnection | None, files: list[tuple[Path, str | None]], keys: list[str], source_dir: Path,
             options: IngestOptions, links: set[Path]) -> Iterator[list[tuple[Path, str | None, str, object, bool]]]:
    """``files`` in chunks of CHECK_FILES (the warehouse asked once a chunk): (path, source, key, its
    ingested_files row: None when it has none, ... when not looked up, and whether it is unchanged: the one rule
    for "is this file new?", one_file.unchanged_since_read; any other file is read."""
    for start in range(0, len(files), CHECK_FILES):
        chunk = list(zip(files[start:start + CHECK_FILES], keys[start:start + CHECK_FILES]))
        known = {} if con is None else _known_files(con, [f for f, _ in chunk], [k for _, k in chunk], source_dir,
                                                     options, links)
        out = []
        for (path, source), key in chunk:
            previous = known.get(key, ...)
            out.append((path, source, key, previous, isinstance(previous, dict) and bool(previous["unchanged"])))
        yield out


def files_to_read(con: duckdb.DuckDBPyConnection | None, source_dir: Path, options: IngestOptions | None = None,
                  sources: list[str] | None = None) -> list[tuple[Path, str | None, str]]:
    """The files ingest_directory would read now (path, source, file_key): every one it would not skip as
    unchanged (_triaged); con None: no warehouse yet, every file. The new-file sensor (pipelines/schedules.py) asks this, so it reports a file as new
    exactly when a run would read it."""
    source_dir = Path(source_dir)
    options = options or load_options(source_dir)
    found, links = discover_files(source_dir, sources)
    files = [(p, s) for p, s in found if sources is None or s in sources]
    return [(path, source, key) for chunk in _triaged(con, files, _keys(files, source_dir, links), source_dir, options,
                                                      links)
            for path, source, key, _, unchanged in chunk if not unchanged]


def ingest_directory(con: duckdb.DuckDBPyConnection, source_dir: Path, options: IngestOptions | None = None,
                     sources: list[str] | None = None,
                     progress: Callable[[FileOutcome, int, int], None] | None = None) -> IngestSummary:
    """Ingest every file (or those of ``sources``; None: all, unknown folders included)."""
    source_dir = Path(source_dir)
    if not source_dir.is_dir():
        raise FileNotFoundError(f"source directory {source_dir} does not exist")
    options = options or load_options(source_dir)
    found, links = discover_files(source_dir, sources)
    files = [(p, s) for p, s in found if sources is None or s in sources]
    keys = _keys(files, source_dir, links)
    summary = IngestSummary()
    batch: list[Prepared] = []
    shas: dict = {}
    done = 0
    for chunk in _triaged(con, files, keys, source_dir, options, links):
        todo = []
        for path, source, key, previous, unchanged in chunk:
            if unchanged:
                done += 1
                summary.outcomes.append(FileOutcome(key, source, "unchanged"))
                if progress:
                    progress(summary.outcomes[-1], done, len(files))
            else:
                todo.append((path, source, key, previous))
        # small files of one source are parsed together (ingest_batch), a large one alone (in pieces where
        # its parser reads pieces); a group is written whole
        for group in ingest_batch.groups(todo):
            for prepared in ingest_batch.prepare(con, group, source_dir, options, shas):
                done += 1
                summary.outcomes.append(prepared.outcome)
                if prepared.record is not None:
                    batch.append(prepared)
                if progress:
                    progress(prepared.outcome, done, len(files))
            if (len(batch) >= BATCH_FILES or sum(p.rows for p in batch) >= BATCH_ROWS
                    or sum(p.held_bytes for p in batch) >= BATCH_BYTES):
                warehouse.write_files(con, batch)
                batch = []
                shas.clear()
    warehouse.write_files(con, batch)
    # A copy recorded as a duplicate holds no rows of its own: when the file it
    # duplicated changed since, read the copy for real (log rotation).
    wanted = dict(zip(keys, files))
    for orphan in sql.query(con, "ingest/orphaned_duplicates")["path"].to_list():
        if orphan in wanted:
            path, source = wanted[orphan]
            summary.outcomes.append(ingest_file(con, path, source, source_dir, options, force=True))
    return summary
