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
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Callable

import duckdb
import polars as pl
import pyarrow.parquet as pq

from analysis import sql, warehouse
from analysis.accounting import AccountingError, account, all_rejects
from analysis.hosts import host_from_path
from analysis.lines import LineFile, empty_rejects, make_rejects, read_bytes, read_lines
from analysis.model import IngestOptions, ParseContext, ParseResult, UnrecognisedFormat
from analysis.options import CONFIG_NAMES, load_options  # noqa: F401 - re-exported

log = logging.getLogger(__name__)

# source folder -> parser module, in ingestion order (topology first: switch
# events are mapped to hosts through it).
SOURCES: dict[str, str] = {
    "topology": "topology", "slurm": "sacct", "slurm_events": "slurm_events", "kernel": "kernel",
    "switch": "switch", "health": "health", "benchmarks": "benchmarks", "telemetry": "telemetry",
    "tickets": "tickets",
}
SIDECAR_SUFFIXES = (".boottime",)  # read by parsers next to their log, not data files
IGNORED_FOLDERS = ("truth",)  # `goodput simulate` writes its ground truth beside the logs


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


def discover(source_dir: Path) -> list[tuple[Path, str | None]]:
    """Every data file below ``source_dir`` with its source (None: unknown folder)."""
    found = []
    for path in sorted(p for p in source_dir.rglob("*") if p.is_file()):
        rel = path.relative_to(source_dir)
        if any(part.startswith(".") for part in rel.parts) or path.name.endswith(SIDECAR_SUFFIXES):
            continue
        if len(rel.parts) == 1 and path.name in CONFIG_NAMES or rel.parts[0] in IGNORED_FOLDERS:
            continue
        source = rel.parts[0] if len(rel.parts) > 1 and rel.parts[0] in SOURCES else None
        found.append((path, source))
    order = {s: i for i, s in enumerate(SOURCES)}
    return sorted(found, key=lambda item: (order.get(item[1], len(order)), str(item[0])))


def parser_for(source: str):
    return importlib.import_module(f"analysis.parsers.{SOURCES[source]}")


def _parse(path: Path, source: str, ctx: ParseContext, data: bytes, problems: list[str]) -> tuple[ParseResult, LineFile]:
    module = parser_for(source)
    name = path.name.removesuffix(".gz")
    if name.endswith(".parquet"):
        if not hasattr(module, "parse_parquet"):
            raise UnrecognisedFormat(f"Parquet is read only under telemetry/, not {source}/")
        result = module.parse_parquet(data, ctx)
        n = pq.ParquetFile(io.BytesIO(data)).metadata.num_rows  # rows in the file, not what the parser kept
        frame = pl.DataFrame(schema={"line_no": pl.Int64, "text": pl.Utf8})
        lines = LineFile(path, hashlib.sha256(data).hexdigest(), path.stat().st_size, frame,
                         empty_rejects(), n, problems)
        return result, lines
    lines = read_lines(path, data, problems, sha256=ctx.sha256)
    return module.parse(lines.lines, ctx), lines


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
             sidecar.read_text(errors="replace").strip() if sidecar.is_file() else None]
    return hashlib.sha256(repr(parts).encode()).hexdigest()[:16]


def ingest_file(con: duckdb.DuckDBPyConnection, path: Path, source: str | None, source_dir: Path,
                options: IngestOptions, force: bool = False) -> FileOutcome:
    key = str(path.resolve())
    if source is None:
        return _record_problem(con, FileIdentity(key, None, None, None, None), path,
                               "unrecognised", f"not in a known source folder ({', '.join(SOURCES)})")
    host_hint = host_from_path(path.relative_to(source_dir))
    try:
        data, problems = read_bytes(path)
    except OSError as exc:
        return _record_problem(con, FileIdentity(key, source, None, host_hint, None), path,
                               "error", f"cannot read file: {exc}")
    ident = FileIdentity(key, source, hashlib.sha256(data).hexdigest(), host_hint,
                         _fingerprint(options, path, host_hint))
    previous = sql.query(con, "file_by_path", {"path": key})
    if (not force and previous.height and previous["status"][0] != "error"
            and (previous["sha256"][0], previous["fingerprint"][0]) == (ident.sha256, ident.fingerprint)):
        return FileOutcome(key, source, "unchanged")
    # The same content for the same host read the same way (a rotated or
    # re-compressed copy) adds nothing; the same text under another host is new.
    twin = sql.query(con, "file_by_sha", {"sha256": ident.sha256, "path": key, "source": source,
                                          "host_hint": host_hint, "fingerprint": ident.fingerprint})
    if twin.height:
        message = f"same content as {twin['path'][0]}"
        warehouse.replace_file_rows(con, key, {}, empty_rejects(), source, _record(ident, path, None, None,
                                                                                   "duplicate", message))
        return FileOutcome(key, source, "duplicate", message=message)
    ctx = ParseContext(path=path, source=source, sha256=ident.sha256, host_hint=host_hint, options=options)
    try:
        result, lines = _parse(path, source, ctx, data, problems)
        counts = account(result, lines)
    except UnrecognisedFormat as exc:
        return _record_problem(con, ident, path, "unrecognised", str(exc))
    except Exception as exc:  # noqa: BLE001 - one bad file must not stop the run
        log.exception("parser failed on %s", path)
        kind = "internal accounting error (a goodput bug)" if isinstance(exc, AccountingError) else "parser error"
        return _record_problem(con, ident, path, "error", f"{kind}: {type(exc).__name__}: {exc}")
    rejects = all_rejects(result, lines)
    message = "; ".join(lines.problems)
    if any("gzip" in p for p in lines.problems):
        rejects = pl.concat([rejects, make_rejects([None], [None], [lines.problems[0]])], how="vertical_relaxed")
    warehouse.replace_file_rows(con, key, result.tables, rejects, source,
                                _record(ident, path, result.format, counts, "ok", message))
    return FileOutcome(key, source, "ok", counts.lines, counts.rows, counts.rejects, message)


def _record(ident: FileIdentity, path: Path, fmt: str | None, counts, status: str, message: str) -> dict:
    c = counts.__dict__ if counts else {}
    return {"path": ident.key, "source": ident.source, "format": fmt, "sha256": ident.sha256,
            "host_hint": ident.host_hint, "fingerprint": ident.fingerprint,
            "size_bytes": path.stat().st_size if path.exists() else None,
            "lines": c.get("lines", 0), "row_lines": c.get("row_lines", 0), "rows": c.get("rows", 0),
            "rejects": c.get("rejects", 0), "skipped": c.get("skipped", 0), "merged": c.get("merged", 0),
            "status": status, "message": message,
            # naive UTC from Python: DuckDB's now()::TIMESTAMP is local time, and the sensor compares with file mtimes
            "ingested_at": datetime.now(timezone.utc).replace(tzinfo=None)}


def _record_problem(con, ident: FileIdentity, path: Path, status: str, message: str) -> FileOutcome:
    """A file no parser could read: one file-level reject row, status in ingested_files."""
    try:
        first = read_lines(path).lines["text"].head(1).to_list()
    except OSError:
        first = []
    reject = make_rejects([None], [first[0] if first else None], [f"{status}: {message}"])
    warehouse.replace_file_rows(con, ident.key, {}, reject, ident.source, _record(ident, path, None, None, status, message))
    return FileOutcome(ident.key, ident.source, status, message=message)


def ingest_directory(con: duckdb.DuckDBPyConnection, source_dir: Path, options: IngestOptions | None = None,
                     sources: list[str] | None = None,
                     progress: Callable[[FileOutcome, int, int], None] | None = None) -> IngestSummary:
    """Ingest every file (or those of ``sources``; None: all, unknown folders included)."""
    source_dir = Path(source_dir)
    if not source_dir.is_dir():
        raise FileNotFoundError(f"source directory {source_dir} does not exist")
    options = options or load_options(source_dir)
    files = [(p, s) for p, s in discover(source_dir) if sources is None or s in sources]
    summary = IngestSummary()
    for i, (path, source) in enumerate(files, start=1):
        outcome = ingest_file(con, path, source, source_dir, options)
        summary.outcomes.append(outcome)
        if progress:
            progress(outcome, i, len(files))
    # A copy recorded as a duplicate holds no rows of its own: when the file it
    # duplicated changed since, read the copy for real (log rotation).
    wanted = {str(p.resolve()): (p, s) for p, s in files}
    for orphan in sql.query(con, "orphaned_duplicates")["path"].to_list():
        if orphan in wanted:
            path, source = wanted[orphan]
            summary.outcomes.append(ingest_file(con, path, source, source_dir, options, force=True))
    return summary
