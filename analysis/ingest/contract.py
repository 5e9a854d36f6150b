"""What every parser takes and returns.

A parser is a module (analysis/ingest/parsers/) with a pure function ``parse(lines, ctx) -> ParseResult``.
``lines`` is the ``(line_no, text)`` frame from :mod:`analysis.ingest.lines`. Each physical line gets
exactly one disposition: it contributes to stored rows, is a reject, is skipped (blank, header, comment),
or was merged into a neighbouring line's row (a continuation). The ingest engine checks that the four add
up to the file's line count, so a parser cannot lose a line silently.

Beside ``parse`` a parser may offer entry points the engine prefers when present (the Protocols below):

- ``stream_parts(chunks, ctx)``: a large text file in pieces, so memory does not grow with the file;
- ``parquet_parts(source, ctx)``: a Parquet file (a path, or the bytes of a gzipped one) a batch at a time;
- ``json_parts(chunks, ctx)``: a JSON document (a Prometheus API answer) streamed as bytes;
- ``parse_batch(lines, ctxs)``: many small files of the source parsed in one call (analysis/ingest/batch.py).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Callable, Iterable, Iterator, Protocol, runtime_checkable

import polars as pl

from analysis.ingest.hosts import MAX_HOSTS
# UnrecognisedFormat, a parser's to raise, is declared with the line reader (which refuses UTF-16 files with it)
from analysis.ingest.lines import MAX_FILE_BYTES, MAX_LINE_BYTES, UnrecognisedFormat, empty_rejects  # noqa: F401


@dataclass
class IngestOptions:
    """Per-run options. Defaults suit a cluster that logs in UTC."""
    tz: str = "UTC"  # time zone of naive source timestamps (sacct, syslog without zone)
    sacct_delimiter: str | None = None  # None: detect from the header ('|', '|#', '^|^')
    sacct_columns: list[str] | None = None  # for dumps without a header line
    syslog_year: int | None = None  # year for RFC 3164 stamps; None: infer from file mtime
    boot_times: dict[str, datetime] = field(default_factory=dict)  # host -> boot time (UTC) for raw dmesg
    # validation run (its folder under benchmarks/) -> when it ran (UTC), for results that carry no time
    benchmark_run_times: dict[str, datetime] = field(default_factory=dict)
    # Resource caps against hostile or broken input (docs/sources.md#limits):
    max_line_bytes: int = MAX_LINE_BYTES  # longer lines are rejects
    max_file_bytes: int = MAX_FILE_BYTES  # decompressed size above which a file is refused
    max_hostlist_hosts: int = MAX_HOSTS  # a NodeList/--exclude expanding to more is refused
    # what a GPU-hour costs, for the report's money figures (docs/sources.md#goodputyaml): {per_gpu_hour: 2.5,
    # currency: USD, partitions: {gpu: 3.1}}; None: the report shows GPU-hours only
    price: dict | None = None


@dataclass
class ParseContext:
    path: Path  # the file (for sidecars and mtime)
    source: str  # slurm, kernel, switch, ...
    host_hint: str | None  # host named by the file's name or folder, for logs without a host field
    options: IngestOptions = field(default_factory=IngestOptions)
    sha256: str | None = None  # of the decompressed content, when the engine already has it
    run_time: datetime | None = None  # benchmarks: the time benchmark_run_times gives the file's run
    # what a parser reading the file in pieces (analysis/ingest/parts.py) keeps from one piece to the next
    state: dict = field(default_factory=dict)
    # The warehouse as it stands, for a parser whose rows depend on what other files stored (kubernetes/: an object
    # state is stored once): runs an sql/ SELECT with a frame staged as ``staged`` (an ``own_file`` column added:
    # this file's key). None: no warehouse (a parser called on its own).
    look_up: Callable[[str, pl.DataFrame], pl.DataFrame] | None = None
    # What parsers remember of the files read since the warehouse was last written (the engine's batch, cleared
    # when it is written): rows a file of the batch holds are not in the warehouse yet. None: a file alone.
    unwritten: dict | None = None

    @property
    def mtime(self) -> datetime:
        return datetime.utcfromtimestamp(self.path.stat().st_mtime)


@dataclass
class ParseResult:
    tables: dict[str, pl.DataFrame]  # warehouse table -> rows; every frame has a line_no column
    rejects: pl.DataFrame = field(default_factory=empty_rejects)
    skipped: int = 0  # blank lines, headers, comments
    merged: int = 0  # continuation lines folded into the row of an earlier line
    format: str | None = None  # the detected format, e.g. "dmesg-T", "sacct|#"
    # formats read as records, not lines (a Prometheus JSON document): how many records the file held, the
    # count the engine checks the dispositions against; line_no is then the record's 1-based number
    records: int | None = None
    problems: list[str] = field(default_factory=list)  # file-level warnings (a partial answer, ...)


@dataclass
class BatchResult:
    """What ``parse_batch`` returns (analysis/ingest/parsers/batched.py: the batch numbering)."""
    tables: dict[str, pl.DataFrame]  # every frame has line_no (batch numbering)
    rejects: pl.DataFrame = field(default_factory=empty_rejects)  # line_no (batch numbering), raw, reason
    skipped: dict[int, int] = field(default_factory=dict)  # fid -> lines skipped (absent: 0)
    merged: dict[int, int] = field(default_factory=dict)  # fid -> continuation lines merged
    formats: dict[int, str] = field(default_factory=dict)  # fid -> the format detected
    unrecognised: dict[int, str] = field(default_factory=dict)  # fid -> why no format fits (its rows are void)


@runtime_checkable
class Parser(Protocol):
    """Every parser: a whole file's lines in, rows and rejects out."""
    def parse(self, lines: pl.DataFrame, ctx: ParseContext) -> ParseResult: ...


@runtime_checkable
class StreamingParser(Protocol):
    """Reads a large text file as it comes: one ParseResult per piece of ``(line_no, text)`` lines, state
    kept in ``ctx.state`` (analysis/ingest/parts.py)."""
    def stream_parts(self, chunks: Iterable[pl.DataFrame], ctx: ParseContext) -> Iterator[ParseResult]: ...


@runtime_checkable
class ParquetParser(Protocol):
    """Reads a Parquet file a row batch at a time; ``line_no`` is then the row's 1-based number."""
    def parquet_parts(self, source: Path | bytes, ctx: ParseContext) -> Iterator[ParseResult]: ...


@runtime_checkable
class JsonParser(Protocol):
    """Reads one JSON document streamed as bytes; ``records`` says how many records it held."""
    def json_parts(self, chunks: Iterable[bytes], ctx: ParseContext) -> Iterator[ParseResult]: ...


@runtime_checkable
class BatchParser(Protocol):
    """Parses the lines of many small files at once; a ``file`` column says whose line each is."""
    def parse_batch(self, lines: pl.DataFrame, ctxs: list[ParseContext]) -> BatchResult: ...


ENTRY_POINTS = {StreamingParser: "stream_parts", ParquetParser: "parquet_parts", JsonParser: "json_parts",
                BatchParser: "parse_batch"}

