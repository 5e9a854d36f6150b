"""What every parser takes and returns.

A parser is a pure function ``parse(lines, ctx) -> ParseResult``. ``lines`` is
the ``(line_no, text)`` frame from :mod:`analysis.lines`. Each physical line
gets exactly one disposition: it contributes to stored rows, is a reject, is
skipped (blank, header, comment), or was merged into a neighbouring line's row
(a continuation). The ingest engine checks that the four add up to the file's
line count, so a parser cannot lose a line silently.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path

import polars as pl

from analysis.hosts import MAX_HOSTS
from analysis.lines import MAX_FILE_BYTES, MAX_LINE_BYTES, empty_rejects


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


@dataclass
class ParseContext:
    path: Path  # the file (for sidecars and mtime)
    source: str  # slurm, kernel, switch, ...
    host_hint: str | None  # host named by the file's name or folder, for logs without a host field
    options: IngestOptions = field(default_factory=IngestOptions)
    sha256: str | None = None  # of the decompressed content, when the engine already has it
    run_time: datetime | None = None  # benchmarks: the time benchmark_run_times gives the file's run
    # what a parser reading the file in pieces (analysis/parts.py) keeps from one piece to the next
    state: dict = field(default_factory=dict)

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


class UnrecognisedFormat(ValueError):
    """Raised by a parser when a file is not in any format it reads. The engine
    records the whole file as unrecognised (one reject row) instead of rejecting
    millions of lines one by one."""
