"""One file of a source directory: found (links and special files refused), identified (its key, content hash,
options fingerprint: is it new or changed?), read (whole, streamed in pieces, Parquet or JSON), parsed, every
line accounted for, and its rows handed back to be written or, when they outgrow SPILL_BYTES, written part by
part. The path the directory loop (analysis/ingest/engine.py) and the batch of small files
(analysis/ingest/batch.py) share: both build on it, it imports neither."""
from __future__ import annotations

import hashlib
import importlib
import io
import logging
import os
import stat as filemode
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path

import duckdb
import polars as pl
import pyarrow.parquet as pq

from analysis import sql, warehouse
from analysis.display import printable, utf8_path
from analysis.ingest.accounting import AccountingError, Tally
from analysis.ingest.hosts import MAX_HOSTS, benchmark_run, host_from_path
from analysis.ingest.lines import (GZIP_MAGIC, MAX_FILE_BYTES, MAX_LINE_BYTES, ChunkStream, FileTooLarge,
                                   LineFile, LineStream, RawFile, _split_lines, empty_rejects, first_line, hash_only,
                                   head_bytes, is_clean, make_rejects, read_lines, read_raw, refuse_utf16)
from analysis.ingest.contract import (IngestOptions, JsonParser, ParquetParser, ParseContext, ParseResult,
                                      StreamingParser, UnrecognisedFormat)
from analysis.ingest.options import CONFIG_NAMES
from analysis.ingest.parts import combine
from analysis.sources import IGNORED_FOLDERS, SOURCES

log = logging.getLogger(__name__)

SIDECAR_SUFFIXES = (".boottime",)  # read by parsers next to their log, not data files


@dataclass
class FileOutcome:
    path: str
    source: str | None
    status: str  # ok | unchanged | duplicate | unrecognised | error
    lines: int = 0
    rows: int = 0
    rejects: int = 0
    message: str = ""


_SPECIAL = {filemode.S_IFIFO: "a FIFO (named pipe)", filemode.S_IFSOCK: "a socket",
            filemode.S_IFCHR: "a character device", filemode.S_IFBLK: "a block device"}


def _special(mode: int) -> str | None:
    """What a file that is neither a regular file nor a folder is ("a FIFO (named pipe)"), or None."""
    if filemode.S_ISREG(mode) or filemode.S_ISDIR(mode):
        return None
    return _SPECIAL.get(filemode.S_IFMT(mode), "no regular file")


def link_refusal(path: Path, source_dir: Path) -> str | None:
    """Why a file is not read, or None (a regular file, or a link to one inside the source directory).
    A FIFO, socket or device is never opened: a FIFO blocks the run until something writes to it, a device
    may never end. A link out of the tree would let a crafted source read any file the run can
    (kernel/x.log -> /etc/passwd) into the warehouse's rejects. A link to a folder inside the tree
    is not followed either, but its files are read where they are, so it is no refusal. A link to a file
    in no source folder is refused like that file (a link to a file of a source folder: linked_file)."""
    try:
        mode = os.lstat(path).st_mode
    except OSError:  # gone: prepare_file says so
        return None
    if not filemode.S_ISLNK(mode):
        kind = _special(mode)
        return f"not a regular file but {kind}: not opened, nothing read" if kind else None
    dest = printable(os.readlink(path))
    try:
        target = path.resolve(strict=True)
    except (OSError, RuntimeError):  # RuntimeError: Python 3.11's "Symlink loop"
        return f"symbolic link loop or broken symbolic link (to {dest}): nothing read"
    root = source_dir.resolve()
    if not target.is_relative_to(root):
        kind = "a folder" if target.is_dir() else "a file"
        return (f"symbolic link to {kind} outside the source directory ({dest}): not followed, nothing read; "
                "copy the file(s) into the source directory instead")
    try:
        kind = _special(target.stat().st_mode)
    except OSError:  # gone since
        return f"broken symbolic link (to {dest}): nothing read"
    if kind:
        return f"symbolic link to {kind} ({dest}), not a regular file: not opened, nothing read"
    if target.is_file() and _walked(target.relative_to(root)) and _source_of(target.relative_to(root)) is None:
        return (f"symbolic link to a file in no source folder ({dest}): not read; that file is recorded as "
                "unrecognised in its own name")
    return None


def _walked(rel: Path) -> bool:
    """Whether the walk (discover_files) lists this file of the source directory (not hidden, not in an
    ignored folder, no sidecar or options file)."""
    parts = rel.parts
    return not (any(p.startswith(".") for p in parts) or parts[0] in IGNORED_FOLDERS
                or rel.name.endswith(SIDECAR_SUFFIXES) or len(parts) == 1 and parts[0] in CONFIG_NAMES)


def _source_of(rel: Path) -> str | None:
    return rel.parts[0] if len(rel.parts) > 1 and rel.parts[0] in SOURCES else None


def linked_file(path: Path, source_dir: Path) -> Path | None:
    """The file a symbolic link leads to, when that file is one of the source directory's that the walk lists
    and reads itself (in a source folder): the link is recorded as a duplicate of it and adds nothing (read, it
    would add every row a second time). None for anything else."""
    if not path.is_symlink():
        return None
    try:
        target = path.resolve(strict=True)
    except (OSError, RuntimeError):
        return None
    root = source_dir.resolve()
    if not target.is_relative_to(root) or not target.is_file():
        return None
    rel = target.relative_to(root)
    return target if _walked(rel) and _source_of(rel) is not None else None


def file_key(path: Path, source_dir: Path) -> str:
    """The path a file is recorded under: resolved (a link inside the tree to a file the walk does not
    list is its target), except a refused link, a FIFO or the like, and a link to a listed file (a duplicate
    of it), each recorded as itself."""
    own = link_refusal(path, source_dir) or linked_file(path, source_dir)
    key = path.parent.resolve() / path.name if own else path.resolve()
    return utf8_path(str(key))


def _linked_duplicate(con: duckdb.DuckDBPyConnection, path: Path, target: Path, key: str, source_dir: Path,
                      options: IngestOptions, force: bool, previous) -> Prepared:
    """A link to a file the run reads itself: recorded as a duplicate of that file, under the identity that
    file is recorded with (its source, host and read options, the hash of its content), so the duplicate stays
    one while the file holds that content. Only the file is hashed; nothing is parsed."""
    rel = target.relative_to(source_dir.resolve())
    source = _source_of(rel)
    hint = host_from_path(rel)
    hint = utf8_path(hint) if hint else None
    ident = FileIdentity(key, source, None, hint,
                         _fingerprint(options, target, hint, _run_time(options, source, rel), source))
    message = f"same file as {utf8_path(str(target))}: a symbolic link to it (the file is read in its own name)"
    try:
        st = path.stat()
        if previous is ...:
            found = sql.query(con, "ingest/file_by_path", {"path": key})
            previous = found.row(0, named=True) if found.height else None
        if (not force and previous is not None and previous["status"] == "duplicate"
                and _unchanged_stat(previous, st, ident.fingerprint)):
            return Prepared(FileOutcome(key, source, "unchanged"))
        ident.sha256 = hash_only(target, options.max_file_bytes).sha256
    except (OSError, FileTooLarge) as exc:
        why = getattr(exc, "strerror", None) or exc
        return _problem(ident, path, "error", f"cannot read the file it links to: {why}", read=False)
    return Prepared(FileOutcome(key, source, "duplicate", message=message),
                    _record(ident, path, None, None, "duplicate", message))


def parser_for(source: str):
    """The parser module the source registry (analysis/sources.py) declares for a folder."""
    return importlib.import_module(SOURCES[source].parser)


class _Reading:
    """One file read for its parser. ``parts()`` yields the parser's parts (analysis/ingest/parts.py) in file
    order; once they are exhausted, ``lines`` describes the whole file: its lines (or records, or
    Parquet rows), the lines refused before any parser saw them, and its problems."""

    def __init__(self, path: Path, source: str, ctx: ParseContext, raw: RawFile):
        self.path, self.source, self.ctx, self.raw = path, source, ctx, raw
        self.lines: LineFile | None = None

    def _done(self, n: int, refused: pl.DataFrame, problems: list[str]) -> None:
        no_lines = pl.DataFrame(schema={"line_no": pl.Int64, "text": pl.Utf8})  # the parser had them
        self.lines = LineFile(self.path, self.raw.sha256, self.path.stat().st_size, no_lines, refused, n, problems)

    def parts(self) -> Iterator[ParseResult]:
        module, path, opts = parser_for(self.source), self.path, self.ctx.options
        if _is_parquet(path):
            yield from self._parquet(module)
        elif _is_json(path, self.source):  # one JSON document (a Prometheus answer): a stream of records
            stream = ChunkStream(path, opts.max_file_bytes)
            chunks, records = stream.chunks(), 0
            for part in module.json_parts(chunks, self.ctx):
                records += part.records or 0
                yield part
            for _ in chunks:  # a parser that stopped early (a broken document): the rest still counts for the hash
                pass
            _same_file(stream.sha256, self.raw)
            self._done(records, empty_rejects(), stream.problems)
        elif _streamed(path, self.source) and 0 < len(self.raw.data) < PIECE_BYTES and is_clean(self.raw):
            # a small file read whole already (_read_whole, or a batch's), nothing in it for the line reader to
            # refuse: its lines are the one piece LineStream would give, without reading and hashing it again
            data, self.raw = self.raw.data, RawFile(b"", self.raw.sha256, [], [])
            refuse_utf16(data[:4096])
            frame = _split_lines(data)
            del data
            yield from module.stream_parts(iter([frame]), self.ctx)
            self._done(frame.height, empty_rejects(), [])
        elif _streamed(path, self.source):  # parsed piece by piece: a multi-gigabyte log in bounded memory
            stream = LineStream(path, opts.max_line_bytes, opts.max_file_bytes, PIECE_BYTES)
            frames = stream.frames()
            yield from module.stream_parts(frames, self.ctx)
            for _ in frames:
                pass
            _same_file(stream.sha256, self.raw)
            self._done(stream.n_lines, stream.rejects, stream.problems)
        else:  # a parser that reads a file whole (small tables: tickets, topology, benchmarks)
            lines = read_lines(path, self.raw, opts.max_line_bytes, opts.max_file_bytes)
            self.raw = RawFile(b"", self.raw.sha256, self.raw.problems, [])  # the bytes are in the lines now
            result = module.parse(lines.lines, self.ctx)
            n, refused, problems = lines.n_lines, lines.rejects, lines.problems
            del lines  # not held while the engine writes the rows
            yield result
            self._done(n, refused, problems)

    def _parquet(self, module) -> Iterator[ParseResult]:
        """Read from the file a batch of rows at a time (a gzipped one from its bytes, decompressed)."""
        path, raw = self.path, self.raw
        if not isinstance(module, ParquetParser):
            readers = [f"{s}/" for s in SOURCES if isinstance(parser_for(s), ParquetParser)]
            raise UnrecognisedFormat(f"Parquet is read only under {' and '.join(readers)}, not {self.source}/")
        source = raw.data or path
        before = _stat_key(path)
        try:
            # rows in the file, not what the parser kept
            n = pq.ParquetFile(io.BytesIO(source) if raw.data else path).metadata.num_rows
        except Exception:  # noqa: BLE001 - pyarrow raises several types for a damaged file
            raise UnrecognisedFormat("not a readable Parquet file (damaged, truncated or another format)") from None
        yield from module.parquet_parts(source, self.ctx)
        if not raw.data and _stat_key(path) != before:
            raise UnrecognisedFormat("the file changed while it was read; it is read again on the next run")
        self._done(n, empty_rejects(), raw.problems)


def _stat_key(path: Path) -> tuple[int, int]:
    stat = path.stat()
    return stat.st_size, stat.st_mtime_ns


def _same_file(sha256: str | None, raw: RawFile) -> None:
    if sha256 != raw.sha256:
        raise UnrecognisedFormat("the file changed while it was read; it is read again on the next run")


def _streamed(path: Path, source: str) -> bool:
    return not _is_parquet(path) and (isinstance(parser_for(source), StreamingParser) or _is_json(path, source))


def _hashed_only(path: Path, source: str) -> bool:
    """Read in a streaming pass for its identity only (its parser reads it again, in pieces): a plain Parquet
    file too, which pyarrow reads from the file a batch at a time."""
    if not _is_parquet(path):
        return _streamed(path, source) and not _read_whole(path, source)
    with open(path, "rb") as f:
        return f.read(2) != GZIP_MAGIC


def _read_whole(path: Path, source: str) -> bool:
    """A plain (not gzipped) file of a line-streaming parser, no larger than the piece it would be streamed in:
    read once, whole (its hash with it), and parsed from those bytes when they are clean (_Reading.parts)."""
    try:
        if path.stat().st_size > PIECE_BYTES:
            return False
        with open(path, "rb") as f:
            if f.read(2) == GZIP_MAGIC:
                return False
    except OSError:
        return False
    return not _is_json(path, source)


def _is_json(path: Path, source: str) -> bool:
    """A JSON document where the source reads one: by its first character, whatever the file's name."""
    return (isinstance(parser_for(source), JsonParser) and not _is_parquet(path)
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


# A source whose parser now writes more than it did: its files are read again once, on the first run after
# an upgrade (tickets: each ticket is also a node event since the reason rules read its words; node_health:
# NVSentinel's SXID checks are 'sxid' rows and kube-state-metrics files are read, where they were not;
# kubernetes: each object names its job, k8s_objects.job_key).
READ_AGAIN = {"tickets": "ticket-events", "node_health": "sxid-ksm", "kubernetes": "job-key"}


def _fingerprint(options: IngestOptions, path: Path, host_hint: str | None, run_time: datetime | None = None,
                 source: str | None = None) -> str:
    """Options that change this file's rows: a new --tz, boot time or benchmark run time re-reads it."""
    sidecar = path.with_name(path.name + ".boottime")
    parts = [options.tz, options.sacct_delimiter, options.sacct_columns, options.syslog_year,
             str(options.boot_times.get(host_hint or "")) if host_hint else None,
             sidecar.read_text(errors="replace")[:200].strip() if sidecar.is_file() else None]
    limits = (options.max_line_bytes, options.max_file_bytes, options.max_hostlist_hosts)
    if limits != (MAX_LINE_BYTES, MAX_FILE_BYTES, MAX_HOSTS):  # default limits keep older fingerprints valid
        parts.append(limits)
    if run_time is not None:  # likewise
        parts.append(str(run_time))
    if source in READ_AGAIN:
        parts.append(READ_AGAIN[source])
    return hashlib.sha256(repr(parts).encode()).hexdigest()[:16]


def _run_time(options: IngestOptions, source: str | None, relpath: Path) -> datetime | None:
    """benchmarks/: the time goodput.yaml's benchmark_run_times gives the file's run, for results without one."""
    if source != "benchmarks" or not options.benchmark_run_times:
        return None
    return options.benchmark_run_times.get(benchmark_run(relpath))


NO_REJECTS = empty_rejects()  # shared, never modified: a frame per file costs more than reading a small file


@dataclass
class Prepared:
    """One file read and parsed, waiting to be written with its batch."""
    outcome: FileOutcome
    record: dict | None = None  # the ingested_files row; None: nothing to write
    tables: dict[str, pl.DataFrame] = field(default_factory=dict)
    rejects: pl.DataFrame = field(default_factory=lambda: NO_REJECTS)
    rows: int = 0
    held_bytes: int = 0  # of its rows and rejects, in memory until the batch is written
    pending: Pending | None = None  # prepare_file(defer=True): identified and read, to be parsed with its batch


@dataclass
class Pending:
    """A file identified and read but not parsed yet (analysis.ingest.batch parses many at once)."""
    ident: FileIdentity
    path: Path
    ctx: ParseContext
    raw: RawFile
    twin: str | None  # an ingested file with the same content, host and read options

    @property
    def twin_key(self) -> tuple:
        return (self.ident.sha256, self.ident.source, self.ident.host_hint, self.ident.fingerprint)


def unchanged_since_read(previous: dict, size: int, mtime_ns: int, fingerprint: str) -> bool:
    """The one rule for "is this file new?" (the engine's triage, the new-file sensor and prepare_file ask it):
    unchanged = the size, mtime and read options it had when last read (``previous``: its ingested_files row).
    As in git's "racy clean" rule, a file modified within a second of its reading may have been rewritten in
    the same clock tick, so it is read again rather than trusted."""
    if (previous["size_bytes"], previous["mtime_ns"], previous["fingerprint"]) != (size, mtime_ns, fingerprint):
        return False
    verified_ns = int(previous["verified_at"].replace(tzinfo=timezone.utc).timestamp() * 1e9)
    return mtime_ns < verified_ns - 1_000_000_000


def _unchanged_stat(previous: dict, stat, fingerprint: str) -> bool:
    return unchanged_since_read(previous, stat.st_size, stat.st_mtime_ns, fingerprint)


def prepare_file(con: duckdb.DuckDBPyConnection, path: Path, source: str | None, source_dir: Path,
                 options: IngestOptions, force: bool = False, batch_shas: dict | None = None,
                 key: str | None = None, previous: dict | None = ..., defer: bool = False) -> Prepared:
    """Read and parse one file (nothing written). A file whose size, mtime and
    read options match what was ingested is not even read. ``key``: its file_key, and ``previous``: its
    ingested_files row (None: it has none), when the caller has them. ``defer``: a file to parse is
    returned read, not parsed, and its twin not looked up (Prepared.pending: ingest_batch does both
    for many files at once)."""
    refused = link_refusal(path, source_dir)
    key = key or file_key(path, source_dir)
    if refused:  # its target (a FIFO, a device) is never opened
        return _problem(FileIdentity(key, source, None, None, None), path, "unrecognised", refused, read=False)
    target = linked_file(path, source_dir)
    if target is not None:  # a link to a file the run reads itself
        return _linked_duplicate(con, path, target, key, source_dir, options, force, previous)
    if source is None:
        return _problem(FileIdentity(key, None, None, None, None), path,
                        "unrecognised", f"not in a known source folder ({', '.join(SOURCES)})")
    host_hint = host_from_path(path.relative_to(source_dir))
    host_hint = utf8_path(host_hint) if host_hint else None
    run_time = _run_time(options, source, path.relative_to(source_dir))
    ident = FileIdentity(key, source, None, host_hint, _fingerprint(options, path, host_hint, run_time, source))
    try:
        stat = path.stat()
    except OSError as exc:
        return _problem(ident, path, "error", f"cannot read file: {exc.strerror or exc}")
    if previous is ...:
        found = sql.query(con, "ingest/file_by_path", {"path": key})
        previous = found.row(0, named=True) if found.height else None
    known = not force and previous is not None and previous["status"] != "error"
    if known and _unchanged_stat(previous, stat, ident.fingerprint):
        return Prepared(FileOutcome(key, source, "unchanged"))
    try:
        # a deferred file is parsed from its bytes with its batch (ingest_batch reads only small files)
        raw = (hash_only(path, options.max_file_bytes) if _hashed_only(path, source) and not defer else
               read_raw(path, options.max_line_bytes, options.max_file_bytes, cap_lines=not _is_parquet(path)))
    except OSError as exc:
        return _problem(ident, path, "error", f"cannot read file: {exc.strerror or exc}")
    except FileTooLarge as exc:
        return _problem(ident, path, "error", f"file refused: {exc}; split it or raise max_file_bytes in goodput.yaml")
    ident.sha256 = raw.sha256
    if known and (previous["sha256"], previous["fingerprint"]) == (ident.sha256, ident.fingerprint):
        # touched, not changed: remember the new mtime so the next run skips it unread
        return Prepared(FileOutcome(key, source, "unchanged"),
                        {"path": key, "mtime_ns": stat.st_mtime_ns, "verified_at": _utc_now()})
    ctx = ParseContext(path=path, source=source, sha256=ident.sha256, host_hint=host_hint, options=options,
                       run_time=run_time, look_up=_look_up(con, key), unwritten=batch_shas)
    if defer:
        return Prepared(FileOutcome(key, source, "ok"), pending=Pending(ident, path, ctx, raw, None))
    twin = sql.query(con, "ingest/file_by_sha", {"sha256": ident.sha256, "path": key, "source": source,
                                          "host_hint": host_hint, "fingerprint": ident.fingerprint})
    return finish(con, Pending(ident, path, ctx, raw, twin["path"][0] if twin.height else None), batch_shas)


def _look_up(con: duckdb.DuckDBPyConnection, key: str):
    """ParseContext.look_up: an sql/ SELECT on the warehouse with ``frame`` staged, this file's key beside it."""
    return lambda name, frame: sql.query_on(con, name, "staged", frame.with_columns(own_file=pl.lit(key)))


def finish(con: duckdb.DuckDBPyConnection, pending: Pending, batch_shas: dict | None = None) -> Prepared:
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
    reading, pending.raw = _Reading(path, source, ctx, raw), None  # the reading holds the bytes of a file read whole
    del raw
    tally, held, writer, problems, fmt = Tally(key), [], None, [], None
    try:
        for part in reading.parts():
            tally.add(part)
            problems += part.problems
            fmt = fmt or part.format
            held.append(part)
            if writer is None and _held_bytes(held) > SPILL_BYTES:
                writer = warehouse.FileWriter(con, key, source)
            if writer is not None:  # a large file: its rows go to the warehouse as they come
                for p in held:
                    writer.write(p.tables, p.rejects)
                held = []
        lines = reading.lines
        counts = tally.counts(lines.n_lines, lines.rejects)
    except BaseException as exc:
        if writer is not None:
            writer.abort()
        if isinstance(exc, UnrecognisedFormat):
            return _problem(ident, path, "unrecognised", str(exc))
        if not isinstance(exc, (Exception, pl.exceptions.PanicException)):
            raise
        # one bad file must not stop the run: the operator gets one line (and the file reproduces it); the
        # trace only at debug level, so `goodput check` and `goodput run` never print a traceback for one bad file
        log.debug("parser failed on %s", printable(path), exc_info=True)
        kind = ("internal accounting error (a goodput bug; please report it)" if isinstance(exc, AccountingError)
                else "could not be parsed (a goodput bug; please report it with the file)")
        return _problem(ident, path, "error", f"{kind}: {type(exc).__name__}: {str(exc).splitlines()[0][:200] if str(exc) else ''}")
    if batch_shas is not None:
        batch_shas.setdefault(pending.twin_key, key)
    refused = lines.rejects
    if any("gzip" in p for p in lines.problems):
        refused = pl.concat([refused, make_rejects([None], [None], [lines.problems[0]])], how="vertical_relaxed")
    message = "; ".join(lines.problems + problems)
    outcome = FileOutcome(key, source, "ok", counts.lines, counts.rows, counts.rejects, message)
    record = _record(ident, path, fmt, counts, "ok", message)
    if writer is not None:
        try:
            writer.write({}, refused)
            writer.commit(record)
        except BaseException:
            writer.abort()
            raise
        return Prepared(outcome)
    result = combine(held)
    rejects = pl.concat([refused, result.rejects], how="vertical_relaxed").sort("line_no")
    return Prepared(outcome, record, result.tables, rejects, counts.rows, _held_bytes([result]))


def _held_bytes(parts: list[ParseResult]) -> int:
    return sum(df.estimated_size() for p in parts for df in (*p.tables.values(), p.rejects))


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



# A file whose rows outgrow this while it is parsed is written part by part, in a transaction of its own
# (analysis.warehouse.FileWriter): its rows are never held whole, whatever its size.
SPILL_BYTES = 64 * 1024 * 1024
# The text a line-based parser is handed at a time (analysis/ingest/parts.py); its working memory is ~20x this.
PIECE_BYTES = 32 * 1024 * 1024
