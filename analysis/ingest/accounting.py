"""Line accounting: every physical line has exactly one disposition."""
from __future__ import annotations

from dataclasses import dataclass

import polars as pl

from analysis.ingest.contract import ParseResult
from analysis.ingest.lines import LineFile


class AccountingError(RuntimeError):
    """A parser's output does not account for its input: a bug, not bad input."""


@dataclass
class FileCounts:
    lines: int
    row_lines: int
    rows: int
    rejects: int
    skipped: int
    merged: int


class Tally:
    """The counts of a file parsed in parts (analysis/ingest/parts.py), added up part by part so that no part
    is kept: a part's lines come after the parts' before it, and none is both stored and rejected."""

    def __init__(self, path):
        self.path, self.last = path, 0
        self.row_lines = self.rows = self.rejects = self.skipped = self.merged = self.records = 0

    def add(self, result: ParseResult) -> None:
        row_line_sets = [df["line_no"] for df in result.tables.values() if df.height]
        row_line_nos = pl.concat(row_line_sets).unique() if row_line_sets else pl.Series("line_no", [], pl.Int64)
        rejected = result.rejects["line_no"].drop_nulls().unique()
        overlap = row_line_nos.filter(row_line_nos.is_in(rejected.implode()))
        if overlap.len():
            raise AccountingError(f"{self.path}: lines both stored and rejected: {overlap.sort().head(5).to_list()}")
        seen = pl.concat([row_line_nos, rejected])
        if seen.len():
            if seen.min() <= self.last:
                raise AccountingError(f"{self.path}: a part holds line {seen.min()}, which a part before it covered")
            self.last = seen.max()
        self.row_lines += row_line_nos.len()
        self.rows += sum(df.height for df in result.tables.values())
        self.rejects += rejected.len()
        self.skipped += result.skipped
        self.merged += result.merged
        self.records += result.records or 0

    def counts(self, n_lines: int, refused: pl.DataFrame) -> FileCounts:
        """``n_lines``: the file's physical lines (records); ``refused``: the lines rejected before any
        parser saw them (over-long lines)."""
        counts = FileCounts(lines=n_lines, row_lines=self.row_lines, rows=self.rows,
                            rejects=self.rejects + refused["line_no"].drop_nulls().n_unique(),
                            skipped=self.skipped, merged=self.merged)
        total = counts.row_lines + counts.rejects + counts.skipped + counts.merged
        if total != counts.lines:
            raise AccountingError(
                f"{self.path}: {counts.lines} lines but {counts.row_lines} stored + {counts.rejects} rejected"
                f" + {counts.skipped} skipped + {counts.merged} merged = {total}")
        return counts


def account(result: ParseResult, lines: LineFile) -> FileCounts:
    tally = Tally(lines.path)
    tally.add(result)
    return tally.counts(lines.n_lines, lines.rejects)
