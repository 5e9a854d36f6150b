"""Parsing the lines of many files of one source in one pass.

A parser with ``parse_batch(lines, ctxs)`` reads a batch of files at once (a
cluster writes thousands of small logs a day; a polars call costs the same for
ten lines as for ten thousand). ``lines`` holds every file's lines: ``fid`` is
the file's index in ``ctxs`` and ``line_no`` is ``fid << 32 | its number in its
file``, so joins and sorts on line_no work across files unchanged and a single
file (fid 0) keeps its own numbers. What looks at neighbouring lines (folded
continuations, year rollovers) stays within a file through ``fid``; what a
file's context decides (host from its name, year from its mtime) is a
per-file value (:func:`per_file`). ``parse(lines, ctx)`` is
``single(parse_batch(numbered(lines), [ctx]))``, so both paths are one code.
"""
from __future__ import annotations

import polars as pl

from analysis.ingest.contract import BatchResult, ParseResult, UnrecognisedFormat  # noqa: F401 - parsers read batch.BatchResult

SHIFT = 32
FILE = 1 << SHIFT  # line_no // FILE is the fid


def numbered(lines: pl.DataFrame, fid: int = 0) -> pl.DataFrame:
    """One file's (line_no, text) as a batch of one."""
    return lines.with_columns(fid=pl.lit(fid, pl.Int64), line_no=pl.col("line_no") + (fid << SHIFT))


def single(result: BatchResult) -> ParseResult:
    """The ParseResult of a batch of one file."""
    if 0 in result.unrecognised:
        raise UnrecognisedFormat(result.unrecognised[0])
    return ParseResult(tables=result.tables, rejects=result.rejects, skipped=result.skipped.get(0, 0),
                       merged=result.merged.get(0, 0), format=result.formats.get(0))


def fid_of(line_no: pl.Expr) -> pl.Expr:
    return line_no // FILE


def local_no(line_no: pl.Expr) -> pl.Expr:
    """A batch line number as the line's number in its own file (for messages that name a line)."""
    return line_no % FILE


def per_file(values: list, dtype, fid: pl.Expr | None = None) -> pl.Expr:
    """``values[fid]`` for each row's file, as an expression on ``fid``: a literal when all files agree."""
    if all(v == values[0] for v in values):
        return pl.lit(values[0], dtype)
    fid = pl.col("fid") if fid is None else fid
    return fid.replace_strict(list(range(len(values))), pl.Series(values, dtype=dtype), default=None,
                              return_dtype=dtype)


def counts(fids: pl.Series) -> dict[int, int]:
    """fid -> how many times it occurs."""
    if not fids.len():
        return {}
    vc = fids.value_counts()
    return dict(zip(vc[vc.columns[0]].to_list(), vc["count"].to_list()))


def formats(fids: pl.Series, names: pl.Series) -> dict[int, str]:
    """fid -> the formats its lines were read in, most lines first, joined by '+'."""
    if not fids.len():
        return {}
    seen = pl.DataFrame({"fid": fids, "name": names}).group_by("fid", "name").len()
    seen = seen.sort(["fid", "len", "name"], descending=[False, True, False])
    return {k[0]: "+".join(part["name"].to_list()) for k, part in seen.partition_by("fid", as_dict=True).items()}
