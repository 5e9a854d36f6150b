"""Line accounting: every physical line has exactly one disposition."""
from __future__ import annotations

from dataclasses import dataclass

import polars as pl

from analysis.lines import LineFile
from analysis.model import ParseResult


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


def all_rejects(result: ParseResult, lines: LineFile) -> pl.DataFrame:
    return pl.concat([lines.rejects, result.rejects], how="vertical_relaxed").sort("line_no")


def account(result: ParseResult, lines: LineFile) -> FileCounts:
    row_line_sets = [df["line_no"] for df in result.tables.values() if df.height]
    row_line_nos = pl.concat(row_line_sets).unique() if row_line_sets else pl.Series("line_no", [], pl.Int64)
    rejects = all_rejects(result, lines)
    overlap = set(row_line_nos.to_list()) & set(rejects["line_no"].drop_nulls().to_list()) if rejects.height else set()
    if overlap:
        raise AccountingError(f"{lines.path}: lines both stored and rejected: {sorted(overlap)[:5]}")
    counts = FileCounts(
        lines=lines.n_lines,
        row_lines=row_line_nos.len(),
        rows=sum(df.height for df in result.tables.values()),
        rejects=rejects["line_no"].drop_nulls().n_unique(),
        skipped=result.skipped,
        merged=result.merged,
    )
    total = counts.row_lines + counts.rejects + counts.skipped + counts.merged
    if total != counts.lines:
        raise AccountingError(
            f"{lines.path}: {counts.lines} lines but {counts.row_lines} stored + {counts.rejects} rejected"
            f" + {counts.skipped} skipped + {counts.merged} merged = {total}")
    return counts
