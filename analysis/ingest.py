"""Ingest a source directory into the warehouse, one file per transaction.

Source layout (see README): one folder per source below the source directory.
A file already ingested with the same content is skipped; a changed file has
its old rows replaced; a file whose content was already ingested under another
name (a rotated or re-compressed log) is recorded as a duplicate and adds
nothing. A file no parser reads is recorded as unrecognised, never skipped
silently.
"""
from __future__ import annotations

import hashlib
import importlib
import io
import logging
import os
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Callable

import duckdb
import polars as pl
import pyarrow.parquet as pq

from analysis import ingest_batch, sql, warehouse
from analysis.accounting import AccountingError, account, all_rejects
from analysis.display import printable, utf8_path
from analysis.hosts import MAX_HOSTS, host_from_path
from analysis.lines import (MAX_FILE_BYTES, MAX_LINE_BYTES, ChunkStream, FileTooLarge, LineFile, LineStream,
                            RawFile, empty_rejects, first_line, hash_only, head_bytes, make_rejects, read_lines,
                            read_raw)
from analysis.model import IngestOptions, ParseContext, ParseResult, UnrecognisedFormat
from analysis.options import CONFIG_NAMES, load_options  # noqa: F401 - re-exported

log = logging.getLogger(__name__)

# source folder -> parser module, in ingestion order (topology first: switch
# events are mapped to hosts through it).
SOURCES: dict[str, str] = {
    "topology": "topology", "slurm": "sacct", "slurm_events": "slurm_events", "kernel": "kernel",
    "switch": "switch", "health": "health", "benchmarks": "benchmarks", "telemetry": "telemetry",
    "network": "network",  # port counters: long CSV/Parquet/Prometheus JSON like telemetry, perfquery, ibqueryerrors
    "tickets": "tickets", "joblogs": "joblogs",
}
SIDECAR_SUFFIXES = (".boottime",)  # read by parsers next to their log, not data files
# truth/: `goodput simulate` writes its ground truth beside the logs; labels/: operator
# labels for the models (labels/lemons.csv), read by `goodput models`, not ingested.
IGNORED_FOLDERS = ("truth", "labels")


@dataclass
class FileOutcome:
    path: str
    source: str | None
    status: str  # ok | unchanged | duplicate | unrecognised | error
    lines: int = 0
    rows: int = 0
    rejects: int = 0
    message: str = ""


@dataclass
class IngestSummary:
    outcomes: list[FileOutcome] = field(default_factory=list)


def discover(source_dir: Path, sources: list[str] | None = None) -> list[tuple[Path, str | None]]:
    """Every data file below ``source_dir`` with its source (None: unknown folder), and every symbolic
    link that is not followed (link_refusal): those are recorded, never read. ``sources``: only the
    files of those source folders, and only those folders are walked (one source of a tree of
    thousands of job logs need not list them all), unless a symbolic link makes the whole tree matter."""
    folders = None if sources is None else [source_dir / s for s in sources if s in SOURCES]
    if folders is not None and any(f.is_symlink() for f in folders):
        folders = None
    found = []
    tops = [source_dir] if folders is None else [f for f in folders if f.is_dir()]
    for path in sorted(p for top in tops for p in top.rglob("*") if p.is_file() or link_refusal(p, source_dir)):
        rel = path.relative_to(source_dir)
        if any(part.startswith(".") for part in rel.parts) or path.name.endswith(SIDECAR_SUFFIXES):
            continue
        if len(rel.parts) == 1 and path.name in CONFIG_NAMES or rel.parts[0] in IGNORED_FOLDERS:
            continue
        source = rel.parts[0] if len(rel.parts) > 1 and rel.parts[0] in SOURCES else None
        found.append((path, source))
    if folders is not None and any(p.is_symlink() for p, _ in found):  # its target may be in another folder
        return [(p, s) for p, s in discover(source_dir) if s in sources]
    if sources is not None:
        found = [(p, s) for p, s in found if s in sources]
    # a link inside the tree to a file also listed would read that file twice
    links = {p for p, _ in found if p.is_symlink()}
    if links:
        root = source_dir.resolve()
        listed = {root / p.relative_to(source_dir) for p, _ in found if p not in links}
        found = [(p, s) for p, s in found
                 if not (p in links and not link_refusal(p, source_dir) and p.resolve() in listed)]
    order = {s: i for i, s in enumerate(SOURCES)}
    return sorted(found, key=lambda item: (order.get(item[1], len(order)), str(item[0])))


def link_refusal(path: Path, source_dir: Path) -> str | None:
    """Why a symbolic link is not followed, or None (not a link, or a link to a file inside the source
    directory). A link out of the tree would let a crafted source read any file the run can
    (kernel/x.log -> /etc/passwd) into the warehouse's rejects. A link to a folder inside the tree
    is not followed either, but its files are read where they are, so it is no refusal."""
    if not path.is_symlink():
        return None
    dest = printable(os.readlink(path))
    try:
        target = path.resolve(strict=True)
    except (OSError, RuntimeError):  # RuntimeError: Python 3.11's "Symlink loop"
        return f"symbolic link loop or broken symbolic link (to {dest}): nothing read"
    if not target.is_relative_to(source_dir.resolve()):
        kind = "a folder" if target.is_dir() else "a file"
        return (f"symbolic link to {kind} outside the source directory ({dest}): not followed, nothing read; "
                "copy the file(s) into the source directory instead")
    return None


def file_key(path: Path, source_dir: Path) -> str:
    """The path a file is recorded under: resolved (a link inside the tree is its target), except a
    refused link, recorded as itself."""
    key = path.parent.resolve() / path.name if link_refusal(path, source_dir) else path.resolve()
    return utf8_path(str(key))


def parser_for(source: str):
    return importlib.import_module(f"analysis.parsers.{SOURCES[source]}")


def _parse(path: Path, source: str, ctx: ParseContext, raw: RawFile) -> tuple[ParseResult, LineFile]:
    module = parser_for(source)
    opts = ctx.options
    no_lines = pl.DataFrame(schema={"line_no": pl.Int64, "text": pl.Utf8})  # the parser had the lines, or records
    if _is_parquet(path):
        if not hasattr(module, "parse_parquet"):
            raise UnrecognisedFormat(f"Parquet is read only under telemetry/ and network/, not {source}/")
        try:
            n = pq.ParquetFile(io.BytesIO(raw.data)).metadata.num_rows  # rows in the file, not what the parser kept
        except Exception:  # noqa: BLE001 - pyarrow raises several types for a damaged file
            raise UnrecognisedFormat("not a readable Parquet file (damaged, truncated or another format)") from None
        result = module.parse_parquet(raw.data, ctx)
        return result, LineFile(path, raw.sha256, path.stat().st_size, no_lines, empty_rejects(), n, raw.problems)
    if _is_json(path, source):  # one JSON document (a Prometheus answer): read as a stream of records
        stream = ChunkStream(path, opts.max_file_bytes)
        chunks = stream.chunks()
        result = module.parse_json(chunks, ctx)
        for _ in chunks:  # a parser that stopped early (a broken document): the rest still counts for the hash
            pass
        _same_file(stream.sha256, raw)
        return result, LineFile(path, raw.sha256, path.stat().st_size, no_lines, empty_rejects(), result.records,
                                stream.problems + result.problems)
    if _streamed(path, source):  # parsed chunk by chunk: a multi-gigabyte log in bounded memory
        stream = LineStream(path, opts.max_line_bytes, opts.max_file_bytes)
        result = module.parse_stream(stream.frames(), ctx)
        _same_file(stream.sha256, raw)
        return result, LineFile(path, raw.sha256, path.stat().st_size, no_lines, stream.rejects, stream.n_lines,
                                stream.problems)
    lines = read_lines(path, raw, opts.max_line_bytes, opts.max_file_bytes)
    return module.parse(lines.lines, ctx), lines


def _same_file(sha256: str | None, raw: RawFile) -> None:
    if sha256 != raw.sha256:
        raise UnrecognisedFormat("the file changed while it was read; it is read again on the next run")


def _streamed(path: Path, source: str) -> bool:
    return not _is_parquet(path) and (hasattr(parser_for(source), "parse_stream") or _is_json(path, source))


def _is_json(path: Path, source: str) -> bool:
    """A JSON document where the source reads one: by its first character, whatever the file's name."""
    return (hasattr(parser_for(source), "parse_json") and not _is_parquet(path)
            and head_bytes(path).lstrip(b" \t\r\n\xef\xbb\xbf")[:1] == b"{")


def _is_parquet(path: Path) -> bool:
    return path.name.removesuffix(".gz").endswith(".parquet")


@dataclass
class FileIdentity:
    """What decides whether a file must be (re-)read: its content, and how it would be read."""
    key: str  # absolute path
    source: str | None
    sha256: str | None
    host_hint: str | None
    fingerprint: str | None  # of the options that change how this file parses


def _fingerprint(options: IngestOptions, path: Path, host_hint: str | None) -> str:
    """Options that change this file's rows: a new --tz or boot time re-reads it."""
    sidecar = path.with_name(path.name + ".boottime")
    parts = [options.tz, options.sacct_delimiter, options.sacct_columns, options.syslog_year,
             str(options.boot_times.get(host_hint or "")) if host_hint else None,
             sidecar.read_text(errors="replace")[:200].strip() if sidecar.is_file() else None]
    limits = (options.max_line_bytes, options.max_file_bytes, options.max_hostlist_hosts)
    if limits != (MAX_LINE_BYTES, MAX_FILE_BYTES, MAX_HOSTS):  # default limits keep older fingerprints valid
        parts.append(limits)
    return hashlib.sha256(repr(parts).encode()).hexdigest()[:16]


NO_REJECTS = empty_rejects()  # shared, never modified: a frame per file costs more than reading a small file


@dataclass
class Prepared:
    """One file read and parsed, waiting to be written with its batch."""
    outcome: FileOutcome
    record: dict | None = None  # the ingested_files row; None: nothing to write
    tables: dict[str, pl.DataFrame] = field(default_factory=dict)
    rejects: pl.DataFrame = field(default_factory=lambda: NO_REJECTS)
    rows: int = 0
    pending: Pending | None = None  # prepare_file(defer=True): identified and read, to be parsed with its batch


@dataclass
class Pending:
    """A file identified and read but not parsed yet (analysis.ingest_batch parses many at once)."""
    ident: FileIdentity
    path: Path
    ctx: ParseContext
    raw: RawFile
    twin: str | None  # an ingested file with the same content, host and read options

    @property
    def twin_key(self) -> tuple:
        return (self.ident.sha256, self.ident.source, self.ident.host_hint, self.ident.fingerprint)


def _unchanged_stat(previous: dict, stat, fingerprint: str) -> bool:
    """Same size, mtime and read options as when ingested. As in git's "racy
    clean" rule, a file modified within a second of its ingestion may have been
    rewritten in the same clock tick, so it is re-read rather than trusted."""
    if (previous["size_bytes"], previous["mtime_ns"], previous["fingerprint"]) != (stat.st_size, stat.st_mtime_ns,
                                                                                   fingerprint):
        return False
    verified_ns = int(previous["verified_at"].replace(tzinfo=timezone.utc).timestamp() * 1e9)
    return stat.st_mtime_ns < verified_ns - 1_000_000_000


def prepare_file(con: duckdb.DuckDBPyConnection, path: Path, source: str | None, source_dir: Path,
                 options: IngestOptions, force: bool = False, batch_shas: dict | None = None,
                 defer: bool = False, previous: pl.DataFrame | None = None, key: str | None = None) -> Prepared:
    """Read and parse one file (nothing written). A file whose size, mtime and
    read options match what was ingested is not even read. ``defer``: a file to
    parse is returned read, not parsed, and its twin not looked up (Prepared.pending:
    ingest_batch does both for many files at once); ``previous``, ``key``: its file_by_path row and
    file_key, already known."""
    refused = link_refusal(path, source_dir)
    key = key or file_key(path, source_dir)
    if refused:  # its target is never opened
        return _problem(FileIdentity(key, source, None, None, None), path, "unrecognised", refused, read=False)
    if source is None:
        return _problem(FileIdentity(key, None, None, None, None), path,
                        "unrecognised", f"not in a known source folder ({', '.join(SOURCES)})")
    host_hint = host_from_path(path.relative_to(source_dir))
    host_hint = utf8_path(host_hint) if host_hint else None
    ident = FileIdentity(key, source, None, host_hint, _fingerprint(options, path, host_hint))
    try:
        stat = path.stat()
    except OSError as exc:
        return _problem(ident, path, "error", f"cannot read file: {exc.strerror or exc}")
    if previous is None:
        previous = sql.query(con, "file_by_path", {"path": key})
    known = not force and previous.height and previous["status"][0] != "error"
    if known and _unchanged_stat(previous.row(0, named=True), stat, ident.fingerprint):
        return Prepared(FileOutcome(key, source, "unchanged"))
    try:
        raw = (hash_only(path, options.max_file_bytes) if _streamed(path, source) and not defer else
               read_raw(path, options.max_line_bytes, options.max_file_bytes, cap_lines=not _is_parquet(path)))
    except OSError as exc:
        return _problem(ident, path, "error", f"cannot read file: {exc.strerror or exc}")
    except FileTooLarge as exc:
        return _problem(ident, path, "error", f"file refused: {exc}; split it or raise max_file_bytes in goodput.yaml")
    ident.sha256 = raw.sha256
    if known and (previous["sha256"][0], previous["fingerprint"][0]) == (ident.sha256, ident.fingerprint):
        # touched, not changed: remember the new mtime so the next run skips it unread
        return Prepared(FileOutcome(key, source, "unchanged"),
                        {"path": key, "mtime_ns": stat.st_mtime_ns, "verified_at": _utc_now()})
    ctx = ParseContext(path=path, source=source, sha256=ident.sha256, host_hint=host_hint, options=options)
    if defer:
        return Prepared(FileOutcome(key, source, "ok"), pending=Pending(ident, path, ctx, raw, None))
    twin = sql.query(con, "file_by_sha", {"sha256": ident.sha256, "path": key, "source": source,
                                          "host_hint": host_hint, "fingerprint": ident.fingerprint})
    return finish(Pending(ident, path, ctx, raw, twin["path"][0] if twin.height else None), batch_shas)


def finish(pending: Pending, batch_shas: dict | None = None) -> Prepared:
    """Parse and account a file prepare_file has read (or record it as a duplicate)."""
    ident, path, ctx, raw = pending.ident, pending.path, pending.ctx, pending.raw
    key, source = ident.key, ident.source
    # The same content for the same host read the same way (a rotated or
    # re-compressed copy) adds nothing; the same text under another host is new.
    original = pending.twin or (batch_shas or {}).get(pending.twin_key)
    if original and original != key:
        message = f"same content as {original}"
        return Prepared(FileOutcome(key, source, "duplicate", message=message),
                        _record(ident, path, None, None, "duplicate", message))
    try:
        result, lines = _parse(path, source, ctx, raw)
        counts = account(result, lines)
    except UnrecognisedFormat as exc:
        return _problem(ident, path, "unrecognised", str(exc))
    except (Exception, pl.exceptions.PanicException) as exc:  # noqa: BLE001 - one bad file must not stop the run
        # the operator gets one line (and the file reproduces it); the trace only at debug level, so
        # `goodput check` and `goodput run` never print a traceback for one bad file
        log.debug("parser failed on %s", printable(path), exc_info=True)
        kind = ("internal accounting error (a goodput bug; please report it)" if isinstance(exc, AccountingError)
                else "could not be parsed (a goodput bug; please report it with the file)")
        return _problem(ident, path, "error", f"{kind}: {type(exc).__name__}: {str(exc).splitlines()[0][:200] if str(exc) else ''}")
    if batch_shas is not None:
        batch_shas.setdefault(pending.twin_key, key)
    rejects = all_rejects(result, lines)
    message = "; ".join(lines.problems)
    if any("gzip" in p for p in lines.problems):
        rejects = pl.concat([rejects, make_rejects([None], [None], [lines.problems[0]])], how="vertical_relaxed")
    return Prepared(FileOutcome(key, source, "ok", counts.lines, counts.rows, counts.rejects, message),
                    _record(ident, path, result.format, counts, "ok", message), result.tables, rejects, counts.rows)


def ingest_file(con: duckdb.DuckDBPyConnection, path: Path, source: str | None, source_dir: Path,
                options: IngestOptions, force: bool = False) -> FileOutcome:
    prepared = prepare_file(con, path, source, source_dir, options, force)
    warehouse.write_files(con, [prepared])
    return prepared.outcome


def _record(ident: FileIdentity, path: Path, fmt: str | None, counts, status: str, message: str,
            follow: bool = True) -> dict:
    c = counts.__dict__ if counts else {}
    try:
        stat = os.stat(path, follow_symlinks=follow)
        size, mtime = stat.st_size, stat.st_mtime_ns
    except OSError:
        size = mtime = None
    return {"path": ident.key, "source": ident.source, "format": fmt, "sha256": ident.sha256,
            "host_hint": ident.host_hint, "fingerprint": ident.fingerprint, "size_bytes": size, "mtime_ns": mtime,
            "lines": c.get("lines", 0), "row_lines": c.get("row_lines", 0), "rows": c.get("rows", 0),
            "rejects": c.get("rejects", 0), "skipped": c.get("skipped", 0), "merged": c.get("merged", 0),
            "status": status, "message": message,
            # naive UTC from Python: DuckDB's now()::TIMESTAMP is local time, and the sensor compares with file mtimes
            "ingested_at": _utc_now()}


def _utc_now() -> datetime:
    return datetime.now(timezone.utc).replace(tzinfo=None)


def _problem(ident: FileIdentity, path: Path, status: str, message: str, read: bool = True) -> Prepared:
    """A file no parser could read: one file-level reject row, status in ingested_files. ``read=False``:
    not even its first line is read (a refused symbolic link)."""
    reject = make_rejects([None], [first_line(path) if read else None], [f"{status}: {message}"])
    return Prepared(FileOutcome(ident.key, ident.source, status, message=message),
                    _record(ident, path, None, None, status, message, follow=read), rejects=reject)


# A batch is written in one transaction: per-file atomicity holds (a file's
# rows are all in or all out), and a source of 2,000 small per-host files pays
# for a few commits instead of 2,000.
BATCH_FILES = 500
BATCH_ROWS = 1_000_000


def ingest_directory(con: duckdb.DuckDBPyConnection, source_dir: Path, options: IngestOptions | None = None,
                     sources: list[str] | None = None,
                     progress: Callable[[FileOutcome, int, int], None] | None = None) -> IngestSummary:
    """Ingest every file (or those of ``sources``; None: all, unknown folders included)."""
    source_dir = Path(source_dir)
    if not source_dir.is_dir():
        raise FileNotFoundError(f"source directory {source_dir} does not exist")
    options = options or load_options(source_dir)
    files = [(p, s) for p, s in discover(source_dir, sources) if sources is None or s in sources]
    summary = IngestSummary()
    batch: list[Prepared] = []
    shas: dict = {}
    done = 0
    # small files of one source are parsed together (ingest_batch); a group is written whole
    for group in ingest_batch.groups(files):
        for prepared in ingest_batch.prepare(con, group, source_dir, options, shas):
            done += 1
            summary.outcomes.append(prepared.outcome)
            if prepared.record is not None:
                batch.append(prepared)
            if progress:
                progress(prepared.outcome, done, len(files))
        if len(batch) >= BATCH_FILES or sum(p.rows for p in batch) >= BATCH_ROWS:
            warehouse.write_files(con, batch)
            batch = []
            shas.clear()
    warehouse.write_files(con, batch)
    # A copy recorded as a duplicate holds no rows of its own: when the file it
    # duplicated changed since, read the copy for real (log rotation).
    orphans = sql.query(con, "orphaned_duplicates")["path"].to_list()
    wanted = {file_key(p, source_dir): (p, s) for p, s in files} if orphans else {}
    for orphan in orphans:
        if orphan in wanted:
            path, source = wanted[orphan]
            summary.outcomes.append(ingest_file(con, path, source, source_dir, options, force=True))
    return summary
