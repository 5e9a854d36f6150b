"""Shared helpers for the table-shaped inputs (tickets, topology, telemetry,
benchmark CSVs): flexible time parsing, header matching and CSV splitting that
keeps physical line numbers.

Two CSV paths exist on purpose:
* ``split_lines`` is vectorised (``str.split``) for large files; lines with
  quoted fields are split by one regex when every field is quoted whole or free
  of quotes, and only odd ones (a stray quote) go through the csv module, one
  line at a time, so a quoted field may hold a comma but not a newline.
* ``csv_records`` runs the csv module record by record over a (small) file.
  Where the caller allows it (a ticket's free-text notes), a quoted field may
  span a few lines; the lines after a record's first are "merged". Two stray
  quotes a few lines apart must not swallow the rows between them: a record
  whose spanning field is a key column, or whose inner lines are rows of their
  own, is refused. A stray quote costs its own line only.
"""
from __future__ import annotations

import csv
import io
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass

import polars as pl

from analysis.ingest.timeutil import aware_to_naive_utc, local_to_utc

_NUMERIC = r"^[+-]?\d+(?:\.\d+)?(?:[eE][+-]?\d+)?$"
_NAIVE_FORMATS = ("%Y-%m-%dT%H:%M:%S%.f", "%Y-%m-%dT%H:%M", "%Y-%m-%d")


def parse_time_any(expr: pl.Expr, tz: str) -> pl.Expr:
    """Text -> naive UTC Datetime("us"). Accepts epoch s/ms/us/ns (magnitude
    decides the unit: ms epochs exceed 1e11 from 1973 on), ISO 8601 with 'T' or
    space, optional fraction, optional zone (Z, UTC, +hh:mm, +hhmm), and plain
    dates. Naive stamps are local time in ``tz``. Anything else gives NULL."""
    s = expr.cast(pl.Utf8).str.strip_chars()
    num = pl.when(s.str.contains(_NUMERIC)).then(s.cast(pl.Float64, strict=False))
    mag = num.abs()
    epoch_us = (pl.when(mag >= 1e17).then(num / 1000).when(mag >= 1e14).then(num)
                .when(mag >= 1e11).then(num * 1000).otherwise(num * 1_000_000))
    epoch = pl.from_epoch(epoch_us.round(0).cast(pl.Int64, strict=False), time_unit="us")
    norm = (s.str.replace(r"^(\d{4})/(\d{2})/(\d{2})", "$1-$2-$3")
            .str.replace(r"^(\d{4}-\d{2}-\d{2})[ T]+", "${1}T")
            .str.replace(r"(?i)\s*(?:Z|UTC|GMT)$", "+00:00")
            .str.replace(r"\s+([+-]\d{2}:?\d{2})$", "$1"))
    aware = aware_to_naive_utc(norm.str.to_datetime("%Y-%m-%dT%H:%M:%S%.f%z", strict=False, time_unit="us"))
    naive = pl.coalesce([norm.str.to_datetime(f, strict=False, time_unit="us") for f in _NAIVE_FORMATS])
    return pl.coalesce([epoch, aware, local_to_utc(naive, tz)]).cast(pl.Datetime("us"))


def datetime_to_utc(series: pl.Series, tz: str) -> pl.Series:
    """A column of any type (parquet: Datetime with/without zone, epoch number,
    text) -> naive UTC Datetime("us")."""
    frame = series.rename("t").to_frame()
    dtype = series.dtype
    if isinstance(dtype, pl.Datetime):
        expr = pl.col("t").cast(pl.Datetime("us", dtype.time_zone))
        expr = aware_to_naive_utc(expr) if dtype.time_zone else local_to_utc(expr, tz)
    elif dtype == pl.Date:
        expr = local_to_utc(pl.col("t").cast(pl.Datetime("us")), tz)
    else:
        expr = parse_time_any(pl.col("t").cast(pl.Utf8), tz)
    return frame.select(expr.cast(pl.Datetime("us")))["t"]


def match_header(names: list[str], aliases: dict[str, tuple[str, ...]]) -> dict[str, int]:
    """Map canonical column -> index, case-insensitively, first alias wins."""
    lowered = [n.strip().strip('"').strip().lower() for n in names]
    found: dict[str, int] = {}
    for canon, alts in aliases.items():
        for alt in (canon, *alts):
            if alt in lowered:
                found[canon] = lowered.index(alt)
                break
    return found


def split_lines(lines: pl.DataFrame, sep: str = ",") -> pl.DataFrame:
    """(line_no, text) -> (line_no, text, fields list[str]); fields stripped of
    surrounding blanks. Unterminated quotes leave ``fields`` NULL."""
    plain = lines.filter(~pl.col("text").str.contains('"', literal=True)).with_columns(
        fields=pl.col("text").str.split(sep).list.eval(pl.element().str.strip_chars()))
    quoted = lines.filter(pl.col("text").str.contains('"', literal=True))
    if quoted.height:
        field, s = _quoted_field(sep), re.escape(sep)
        clean = pl.col("text").str.contains(f"^{field}(?:{s}{field})*$")
        regular = quoted.filter(clean).with_columns(fields=_quoted_fields(sep))
        odd = quoted.filter(~clean)  # rare: only these lines pay for the csv module
        odd = odd.with_columns(fields=pl.Series([_one_line(t, sep) for t in odd["text"]], dtype=pl.List(pl.Utf8)))
        plain = pl.concat([plain, regular, odd]).sort("line_no")
    return plain


def split_columns(lines: pl.DataFrame, width: int, sep: str = ",") -> pl.DataFrame | None:
    """(line_no, text) -> (line_no, text, f0 ... f<width-1>): what split_lines gives as ``fields``, one column a
    field, when every line has ``width`` fields, each line free of quotes or of fields quoted whole
    (_quoted_field), with no CR or BOM; else None (split_lines then reads them). Such lines are read by polars'
    CSV reader, several times faster than a list of fields a line: a field quoted whole, or free of quotes, reads
    the same there, and one regex says that every line is such fields, ``width`` of them. They are stripped as
    split_lines strips them (a line with a quote as its csv path does)."""
    if not lines.height or width < 1 or len(sep) != 1:
        return None
    text, field, s = pl.col("text"), _quoted_field(sep), re.escape(sep)
    quoted = text.str.contains('"', literal=True)
    # width such fields and nothing else (_quoted_field holds no CR), one regex pass
    shaped = text.str.contains(f"^{field}(?:{s}{field}){{{width - 1}}}$")
    try:
        regular = lines.select(shaped.all() & ~text.str.contains("\ufeff", literal=True).any()).item()
    except pl.exceptions.PolarsError:  # a regex too large to build (hundreds of columns)
        regular = False
    if not regular:
        return None
    names = [f"f{i}" for i in range(width)]
    try:
        read = pl.read_csv(lines["text"].str.join("\n").item().encode(), has_header=False, separator=sep,
                           quote_char='"', schema={c: pl.Utf8 for c in names})
    except pl.exceptions.PolarsError:
        return None
    if read.height != lines.height:
        return None
    is_quoted = lines.select(quoted).to_series()
    n_quoted = int(is_quoted.sum())

    def stripped(c: str) -> pl.Expr:  # one strip where all lines are of one kind (the usual file)
        f = pl.col(c).fill_null("")
        if n_quoted in (0, lines.height):
            return f.str.strip_chars(_PY_SPACE if n_quoted else None)
        return pl.when(pl.col("q")).then(f.str.strip_chars(_PY_SPACE)).otherwise(f.str.strip_chars())

    return lines.with_columns(read.with_columns(q=is_quoted).select(stripped(c) for c in names))


def _quoted_field(sep: str) -> str:
    """A field the csv module reads without a question: quoted whole (quotes inside doubled), or free of
    quotes; neither holds a CR."""
    s = re.escape(sep)
    return f'(?:"(?:[^"\\r]|"")*"|[^"{s}\\r]*)'


def _quoted_fields(sep: str) -> pl.Expr:
    """The fields of a line of such fields, as csv.reader gives them (stripped, like _one_line): with a
    separator put in front of the line, each match is a separator and the field after it (never empty,
    so an empty first field is not lost)."""
    s = re.escape(sep)
    return pl.concat_str([pl.lit(sep), pl.col("text")]).str.extract_all(f"{s}{_quoted_field(sep)}").list.eval(
        pl.element().str.strip_prefix(sep).pipe(
            lambda f: pl.when(f.str.starts_with('"')).then(f.str.slice(1, f.str.len_chars() - 2)
                                                              .str.replace_all('""', '"', literal=True))
            .otherwise(f)).str.strip_chars(_PY_SPACE))


# what str.strip() takes off (it counts \x1c-\x1f as blanks, polars' default does not)
_PY_SPACE = "".join(c for c in map(chr, range(0x3001)) if c.isspace())


def _one_line(text: str, sep: str) -> list[str] | None:
    """One physical line through the csv module; None when its quoting is broken."""
    if text.count('"') % 2:
        return None
    try:  # a bare CR in an unquoted field, or text after a closing quote, is a csv.Error
        rows = list(csv.reader([text.replace("\r", " ")], delimiter=sep, strict=True))
    except csv.Error:
        return None
    return [f.strip() for f in rows[0]] if len(rows) == 1 else None


@dataclass
class Record:
    line_no: int  # first physical line of the record
    fields: list[str] | None  # None: broken quoting
    raw: str
    n_lines: int  # physical lines the record spans
    reason: str | None = None  # why fields is None, when more is known than "broken quoting"


BROKEN = "broken CSV quoting (unterminated or stray quote)"
UNBALANCED = "broken CSV quoting (unbalanced quote; a field cannot span lines here)"
# A quoted field may span lines (a ticket note with newlines), but not many: a
# stray quote must cost one line, not swallow the rest of the file.
MAX_RECORD_LINES = 32


def csv_records(lines: pl.DataFrame, sep: str = ",", accept: Callable[[list[str], list[str]], str | None] | None = None,
                max_lines: int = MAX_RECORD_LINES) -> Iterator[Record]:
    """The records of a small CSV. A line with an odd number of quotes opens a
    record that runs until the quotes balance (at most ``max_lines`` lines; 1: a
    line-oriented file, where a field never spans lines); a multi-line record is
    kept only if it parses and ``accept(fields, its lines)`` finds no fault (it
    returns the reason). Otherwise only its first line is a broken record
    (fields None) and reading resumes on the next line. Blank lines give a
    record with empty fields (the caller counts them as skipped)."""
    nos, texts = lines["line_no"].to_list(), lines["text"].to_list()
    odd = [t.count('"') % 2 == 1 for t in texts]
    i = 0
    while i < len(texts):
        j = i
        if odd[i]:  # find the line that closes the quote
            j = i + 1
            while j < len(texts) and not odd[j] and j - i + 1 < max_lines:
                j += 1
            if j >= len(texts) or not odd[j] or j - i + 1 > max_lines:
                yield Record(nos[i], None, texts[i], 1, BROKEN if max_lines > 1 else UNBALANCED)
                i += 1
                continue
        fields = _parse_record("\n".join(texts[i:j + 1]), sep)
        if j > i:  # not a real multi-line record: only its first line is bad
            fault = BROKEN if fields is None else accept(fields, texts[i:j + 1]) if accept else None
            if fault:
                yield Record(nos[i], None, texts[i], 1, fault)
                i += 1
                continue
        yield Record(nos[i], fields, "\n".join(texts[i:j + 1]), j - i + 1)
        i = j + 1


def _merge_fault(fields: list[str], texts: list[str], width: int | None, sep: str,
                 key_columns: dict[int, str]) -> str | None:
    """Why a multi-line record is stray quotes merging rows, or None. ``key_columns``: index -> name of
    the columns whose value is never multi-line (a host, a time)."""
    if width is None:
        return None
    if len(fields) != width:
        return BROKEN
    spanning = [key_columns[k] for k, f in enumerate(fields) if "\n" in f and k in key_columns]
    if spanning:
        return f"stray quotes: a quoted {spanning[0]} would run over {len(texts)} lines (rows merged)"
    # the text inside the spanning field: inner lines whole, the last line up to its closing quote
    inside = [t.replace('""', "") for t in texts[1:-1]] + [texts[-1].replace('""', "").split('"', 1)[0]]
    rows = sum(len(t.split(sep)) >= width for t in inside)
    if rows:
        return f"stray quotes: a quoted field would swallow {rows} line(s) that are rows of their own"
    return None


def _parse_record(text: str, sep: str) -> list[str] | None:
    try:
        rows = list(csv.reader(io.StringIO(text, newline=""), delimiter=sep, strict=True))
    except csv.Error:
        return None
    if len(rows) != 1:
        return [] if not rows else None
    return [f.strip() for f in rows[0]]


@dataclass
class Table:
    rows: pl.DataFrame  # line_no, raw, then one Utf8 column per canonical name (NULL when empty/absent)
    rejects: list[tuple[int, str, str]]  # (line_no, raw, reason)
    skipped: int  # blank lines and header lines (repeated headers included)
    merged: int  # continuation lines of multi-line records


def records_table(lines: pl.DataFrame, aliases: dict[str, tuple[str, ...]], required: tuple[str, ...],
                  what: str, free_text: tuple[str, ...] | None = None) -> Table:
    """Small header-led CSV -> one Utf8 column per canonical name. Raises
    UnrecognisedFormat when the first non-blank record is not a header naming
    every ``required`` column (any order, any case). ``free_text``: the
    canonical columns whose quoted value may span lines (columns the header
    names that are not in ``aliases`` may too); None: one record per line."""
    from analysis.ingest.contract import UnrecognisedFormat

    header: dict[str, int] | None = None
    width = 0
    header_key: list[str] = []
    data: list[tuple[int, str, list[str]]] = []
    rejects: list[tuple[int, str, str]] = []
    skipped = merged = 0
    keys: dict[int, str] = {}

    def accept(fields: list[str], texts: list[str]) -> str | None:
        return _merge_fault(fields, texts, width if header else None, ",", keys)

    records = csv_records(lines, accept=accept, max_lines=1 if free_text is None else MAX_RECORD_LINES)
    for rec in records:
        if rec.fields is not None and not any(rec.fields):
            skipped += rec.n_lines  # blank line (or a row of empty cells)
            continue
        if header is None:
            cols = match_header(rec.fields or [], aliases)
            missing = [c for c in required if c not in cols]
            if rec.fields is None or missing:
                raise UnrecognisedFormat(
                    f"not a {what} CSV: the first line must be a header naming {', '.join(required)}"
                    f" (missing {', '.join(missing) or 'a valid header'})")
            header, width, header_key = cols, len(rec.fields), [f.lower() for f in rec.fields]
            keys = {idx: canon for canon, idx in cols.items() if canon not in (free_text or ())}
            skipped += rec.n_lines
            continue
        merged += rec.n_lines - 1  # the record's first line carries it; the rest are merged
        if rec.fields is None:
            rejects.append((rec.line_no, rec.raw, rec.reason or BROKEN))
        elif [f.lower() for f in rec.fields] == header_key:
            skipped += 1  # header repeated by concatenated exports
        elif len(rec.fields) != width and any(rec.fields[width:]) or len(rec.fields) < width:
            rejects.append((rec.line_no, rec.raw, f"{len(rec.fields)} fields, header has {width}"))
        else:
            data.append((rec.line_no, rec.raw, rec.fields))
    cols = {"line_no": [d[0] for d in data], "raw": [d[1] for d in data]}
    for canon in aliases:
        idx = header.get(canon) if header else None
        cols[canon] = [(d[2][idx] or None) if idx is not None else None for d in data]
    schema = {"line_no": pl.Int64, "raw": pl.Utf8, **{c: pl.Utf8 for c in aliases}}
    return Table(pl.DataFrame(cols, schema=schema), rejects, skipped, merged)


def rejects_frame(listed: list[tuple[int, str, str]], bad: pl.DataFrame | None = None) -> pl.DataFrame:
    """Combine python-side rejects with a polars frame of (line_no, raw, reason)."""
    from analysis.ingest.lines import make_rejects
    frames = [make_rejects([r[0] for r in listed], [r[1] for r in listed], [r[2] for r in listed])]
    if bad is not None and bad.height:
        frames.append(make_rejects(bad["line_no"], bad["raw"], bad["reason"].to_list()))
    return pl.concat(frames).sort("line_no")
