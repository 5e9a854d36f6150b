"""A file parsed in parts: how a parser reads a large file piece by piece, so that neither the file nor its
rows are ever held whole (the engine writes each part as it comes: analysis/ingest/one_file.py).

A part is a ParseResult for consecutive lines (or records) of the file, in file order; the parts' counts
add up to the file's. A parser that reads pieces needs to know where a record may begin (``cut_frames``:
a row split over lines, a multi-line kernel message stays in one piece) and what it keeps from one
piece to the next (a header's columns; in ``ctx.state``, the year a year-less log is in).
"""
from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator

import polars as pl

from analysis.ingest.contract import ParseContext, ParseResult, UnrecognisedFormat
from analysis.ingest.lines import empty_rejects, make_rejects

# The lines searched, from the end of a piece back, for a place a record may begin: a record longer than
# this (no real one is) is cut where the piece ends.
CUT_SEARCH_LINES = 100_000


def combine(parts: Iterable[ParseResult]) -> ParseResult:
    """A file's parts as one result (what ``parse`` returns for a file read whole)."""
    parts = list(parts)
    names = dict.fromkeys(t for p in parts for t in p.tables)
    tables = {t: pl.concat([p.tables[t] for p in parts if t in p.tables], how="diagonal_relaxed") for t in names}
    records = [p.records for p in parts if p.records is not None]
    return ParseResult(
        tables=tables,
        rejects=pl.concat([p.rejects for p in parts], how="vertical_relaxed") if parts else empty_rejects(),
        skipped=sum(p.skipped for p in parts), merged=sum(p.merged for p in parts),
        format=next((p.format for p in parts if p.format), None), records=sum(records) if records else None,
        problems=[x for p in parts for x in p.problems])


def cut_frames(frames: Iterable[pl.DataFrame], starts: Callable[[pl.DataFrame], pl.Series]) -> Iterator[pl.DataFrame]:
    """The (line_no, text) frames cut again so that each ends just before a line where ``starts(lines)``
    is true (a record may begin there); the lines after the last such line go on with the next frame.
    The last frame is not cut: a file read in one frame is one piece, parsed as it is when read whole."""
    frames = iter(frames)
    carry, frame = None, next(frames, None)
    while frame is not None:
        following = next(frames, None)
        if carry is not None:
            frame = pl.concat([carry, frame])
            carry = None
        if following is None:
            if frame.height:
                yield frame
            break
        tail = frame.tail(CUT_SEARCH_LINES)
        offset = frame.height - tail.height
        hits = pl.DataFrame({"hit": starts(tail)}).with_row_index("i")
        hits = hits.filter(pl.col("hit") & (pl.col("i") + offset > 0))
        if hits.height:
            cut = offset + hits["i"][-1]
            yield frame.head(cut)
            carry = frame.slice(cut)
        elif offset:  # a record longer than the search window (none is): cut where the frame ends
            yield frame
        else:  # the frame is one record so far: it goes on with the next
            carry = frame
        frame = following


def each_piece(parse: Callable[[pl.DataFrame, ParseContext], ParseResult], frames: Iterable[pl.DataFrame],
               ctx: ParseContext, starts: Callable[[pl.DataFrame], pl.Series] | None = None) -> Iterator[ParseResult]:
    """``parse`` over a file's pieces, one part each. Whether the file is in the parser's format is decided
    on its first piece: a later piece in which nothing reads (a file that stops being that format) is
    rejected line by line, with the reason the parser gives for the piece."""
    first = True
    for piece in (cut_frames(frames, starts) if starts else frames):
        try:
            yield parse(piece, ctx)
        except UnrecognisedFormat as exc:
            if first:
                raise
            blank = piece["text"].str.strip_chars() == ""
            bad = piece.filter(~blank)
            yield ParseResult({}, rejects=make_rejects(bad["line_no"], bad["text"], str(exc)),
                              skipped=int(blank.sum()))
        first = False
