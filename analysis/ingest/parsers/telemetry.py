"""Long-format telemetry (time, metric, value, labels) -> ``telemetry``.

CSV through ``stream_parts(frames, ctx)`` (the engine hands a large file over in chunks of lines and writes
each chunk's rows as they come, so it is read in bounded memory; ``parse(lines, ctx)`` is the one-chunk
case), Parquet through ``parquet_parts(file, ctx)``, a batch of rows at a time (line_no = 1-based row
number: the engine counts parquet rows as lines), Prometheus API JSON through ``json_parts``
(analysis/ingest/parsers/promjson.py).
CSV lines are split with ``str.split``; only lines with a double quote go through the csv module (a
quoted field cannot span lines here).

Columns are matched by header name, any order and case: time, metric (or name, __name__, ...), value.
Every other column is a label, read as analysis/ingest/parsers/series.py says: host (host, node, hostname,
instance, ...; ``node01:9100`` -> node01), gpu (gpu, gpu_id, index, a device named nvidia3), labels that
name the scrape target left out, the rest kept in the metric name (``time,host,device,port,metric,value``
-> ``node_infiniband_..._total{device="mlx5_0",port="1"}``). A file without a host column is accepted
when its name/folder names the host (ctx.host_hint).
time: ISO 8601 with or without zone, or epoch s/ms; naive stamps are in ctx.options.tz. Rejected:
unparseable time, a time outside the years 1970-2100 (options.YEARS), no host (a dated daily file's name,
dcgm-2024-03-01.csv, names none: hosts.host_from_path), empty metric, a value that is not a finite number
(NaN, Inf, stale markers and DCGM blanks with their own reasons), a gpu that is not an integer. Header lines repeated inside the
file (concatenated exports) are skipped.
"""
from __future__ import annotations

import io
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import polars as pl
import pyarrow as pa
import pyarrow.parquet as pq

from analysis.ingest.contract import ParseContext, ParseResult, UnrecognisedFormat
from analysis.ingest.lines import make_rejects
from analysis.ingest.options import YEARS
from analysis.ingest.parsers import promjson, series
from analysis.ingest.parsers.csvlines import (datetime_to_utc, match_header, parse_time_any, split_columns,
                                              split_lines)
from analysis.ingest.parts import combine
from analysis.ingest.timeutil import in_years

ALIASES: dict[str, tuple[str, ...]] = {
    "time": ("timestamp", "ts", "datetime", "date_time", "time_utc", "sample_time"),
    "metric": ("name", "metric_name", "field", "counter", "__name__"),
    "value": ("val", "metric_value", "reading"),
}
PARQUET_BATCH_ROWS = 1_000_000


@dataclass
class Layout:
    """Where a file's columns are: the canonical ones by index, the labels by name."""
    cols: dict[str, int]
    labels: dict[str, int]  # label name -> column index

    @classmethod
    def of(cls, names: list[str], host_hint: str | None, what: str) -> Layout:
        cols = match_header(names, ALIASES)
        labels: dict[str, int] = {}
        for i, raw in enumerate(names):
            name = raw.strip().strip('"').strip()
            if name and i not in cols.values() and name.lower() not in {k.lower() for k in labels}:
                labels[name] = i
        missing = [c for c in ALIASES if c not in cols]
        if not host_hint and not {n.lower() for n in labels} & set(series.HOST_LABELS):
            missing.append("host")
        if missing:
            raise UnrecognisedFormat(
                f"not long-format telemetry {what}: no {', '.join(missing)} column (expected time, metric, value "
                "and labels such as host, gpu, device, port; host may come from the file name)")
        return cls(cols, labels)


def parse(lines: pl.DataFrame, ctx: ParseContext) -> ParseResult:
    return combine(stream_parts([lines], ctx))


def json_parts(chunks: Iterable[bytes], ctx: ParseContext) -> Iterator[ParseResult]:
    return promjson.json_parts(chunks, ctx)


def parse_stream(chunks: Iterable[pl.DataFrame], ctx: ParseContext) -> ParseResult:
    return combine(stream_parts(chunks, ctx))


def stream_parts(chunks: Iterable[pl.DataFrame], ctx: ParseContext) -> Iterator[ParseResult]:
    """The file's (line_no, text) frames in order, one part each: the first non-blank line is the header for all."""
    head_text, layout, width, empty = None, None, 0, True
    for lines in chunks:
        empty = False
        body = lines.filter(pl.col("text").str.strip_chars() != "")
        skipped = lines.height - body.height
        if layout is None and body.height:
            head_text = body["text"][0]
            header = split_lines(body.head(1))["fields"].to_list()[0] or []
            layout, width = Layout.of(header, ctx.host_hint, "CSV"), len(header)
        if layout is None:
            yield ParseResult(tables={"telemetry": series.empty()}, skipped=skipped, format="telemetry-csv")
            continue
        is_header = pl.col("text") == head_text
        rows = body.filter(~is_header)
        skipped += body.height - rows.height
        good, bad = _csv_rows(split_columns(rows, width) if width else None, rows, layout, width, ctx)
        yield ParseResult(tables={"telemetry": good}, rejects=bad.sort("line_no"), skipped=skipped,
                          format="telemetry-csv")
    if empty:
        yield ParseResult(tables={"telemetry": series.empty()}, format="telemetry-csv")


def _csv_rows(columns: pl.DataFrame | None, rows: pl.DataFrame, layout: Layout, width: int, ctx: ParseContext
              ) -> tuple[pl.DataFrame, pl.DataFrame]:
    """``columns``: the rows split into a column a field (csvlines.split_columns), None when they need
    split_lines (a ragged row, a stray quote)."""
    if columns is not None:  # every row has the header's fields
        picked = columns.select("line_no", pl.col("text").alias("raw"),
                                *[pl.col(f"f{i}").alias(c) for c, i in layout.cols.items()],
                                *[pl.col(f"f{i}").alias(series.col(name)) for name, i in layout.labels.items()])
        return _picked_rows(picked, layout, ctx)
    rows = split_lines(rows)
    n = pl.col("fields").list.len()
    ok_shape = (n == width) | ((n > width) & (pl.col("fields").list.slice(width).list.join("") == ""))
    shape = rows.with_columns(
        reason=pl.when(pl.col("fields").is_null()).then(pl.lit("broken CSV quoting"))
        .when(~ok_shape).then(pl.format("{} fields, header has {}", n, pl.lit(width))))
    bad_shape = shape.filter(pl.col("reason").is_not_null())
    fields = pl.col("fields")
    picked = shape.filter(pl.col("reason").is_null()).select(
        "line_no", pl.col("text").alias("raw"),
        *[fields.list.get(i).alias(c) for c, i in layout.cols.items()],
        *[fields.list.get(i).alias(series.col(name)) for name, i in layout.labels.items()])
    good, bad = _picked_rows(picked, layout, ctx)
    return good, pl.concat([make_rejects(bad_shape["line_no"], bad_shape["text"], bad_shape["reason"].to_list()), bad])


def _picked_rows(picked: pl.DataFrame, layout: Layout, ctx: ParseContext) -> tuple[pl.DataFrame, pl.DataFrame]:
    """Rows with their text fields by name -> (telemetry rows, their rejects)."""
    picked, late = _outside_years(picked.with_columns(time_t=_distinct_times(picked["time"], ctx.options.tz)))
    good, bad = series.finish(series.resolve(picked, list(layout.labels), ctx.host_hint))
    return good, pl.concat([make_rejects(late["line_no"], late["raw"], late["reason"].to_list()),
                            make_rejects(bad["line_no"], bad["raw"], bad["reason"].to_list())])


def _outside_years(picked: pl.DataFrame) -> tuple[pl.DataFrame, pl.DataFrame]:
    """(the rows whose time is unparsed or within the years a real cluster's log can carry (analysis/ingest/options.py
    YEARS), the others with a 'reason'): an epoch of 99999999999999999999 would land in the year 5138."""
    outside = pl.col("time_t").is_not_null() & ~in_years(pl.col("time_t"))
    if not picked.select(outside.any()).item():  # the usual file: no copy of every row through a filter
        return picked, picked.clear().with_columns(reason=pl.lit(None, pl.Utf8))
    late = picked.filter(outside).with_columns(reason=pl.format(
        "time '{}' is outside the years {}-{}", pl.col("time").cast(pl.Utf8).fill_null(pl.col("time_t").cast(pl.Utf8)),
        pl.lit(YEARS[0]), pl.lit(YEARS[1])))
    return picked.filter(~outside), late


def _distinct_times(texts: pl.Series, tz: str) -> pl.Series:
    """parse_time_any once per distinct text: one sample time covers every metric and GPU of a host."""
    distinct = texts.unique().to_frame("time").with_columns(t=parse_time_any(pl.col("time"), tz))
    return texts.to_frame("time").join(distinct, on="time", how="left", maintain_order="left")["t"]


def parse_parquet(data: bytes | Path, ctx: ParseContext) -> ParseResult:
    return combine(parquet_parts(data, ctx))


def parquet_parts(source: Path | bytes, ctx: ParseContext) -> Iterator[ParseResult]:
    """``source``: the file, or its bytes (already decompressed when it was gzipped). Read a batch of rows at
    a time, one part each: the text forms of a batch's columns, not of the whole file, are in memory at once."""
    damaged = UnrecognisedFormat("not a readable Parquet file: its footer reads but its column data is damaged "
                                 "(truncated or corrupted copy?)")
    try:
        schema = pl.read_parquet_schema(io.BytesIO(source) if isinstance(source, bytes) else source)
        batches = _frames(pq.ParquetFile(io.BytesIO(source) if isinstance(source, bytes) else source), source)
    except (pl.exceptions.PolarsError, pa.ArrowException, OSError, ValueError):
        raise damaged from None
    names = list(schema)
    layout = Layout.of(names, ctx.host_hint, f"parquet ({', '.join(names[:8])})")
    for canon, i in layout.cols.items():
        if schema[names[i]].is_nested():
            raise UnrecognisedFormat(f"not long-format telemetry parquet: column '{names[i]}' ({canon}) holds "
                                     f"{schema[names[i]]} values, not one value per row")
    layout.labels = {k: i for k, i in layout.labels.items() if not schema[names[i]].is_nested()}
    offset = 0
    while True:
        try:
            frame = next(batches, None)
        except (pl.exceptions.PolarsError, pl.exceptions.PanicException, pa.ArrowException, OSError, ValueError):
            # the engine has read the footer already, so this is damage inside the column data
            raise damaged from None
        if frame is None:
            break
        good, bad = _parquet_rows(frame, layout, offset, ctx)
        yield ParseResult(tables={"telemetry": good}, rejects=bad, format="telemetry-parquet")
        offset += frame.height
    if offset == 0:
        yield ParseResult(tables={"telemetry": series.empty()}, format="telemetry-parquet")


def _frames(file: pq.ParquetFile, source: Path | bytes) -> Iterator[pl.DataFrame]:
    """The file's rows, PARQUET_BATCH_ROWS at a time: a file of no more rows in one read by polars' own reader
    (several times faster than pyarrow's batches made polars frames), a larger one batch by batch."""
    if file.metadata.num_rows <= PARQUET_BATCH_ROWS:
        frame = pl.read_parquet(io.BytesIO(source) if isinstance(source, bytes) else source)
        if frame.height:
            yield frame
        return
    for batch in file.iter_batches(batch_size=PARQUET_BATCH_ROWS):
        yield pl.from_arrow(batch)


def _parquet_rows(frame: pl.DataFrame, layout: Layout, offset: int, ctx: ParseContext) -> tuple[pl.DataFrame, pl.DataFrame]:
    names = frame.columns
    stamps, values = frame[names[layout.cols["time"]]], frame[names[layout.cols["value"]]]
    picked = pl.DataFrame({
        "line_no": pl.int_range(offset + 1, offset + frame.height + 1, eager=True, dtype=pl.Int64),
        **{c: _kept(frame[names[i]], c) for c, i in layout.cols.items()},
        **{series.col(name): _kept(frame[names[i]]) for name, i in layout.labels.items()},
        "stale": _stale(values)})
    if not (isinstance(stamps.dtype, pl.Datetime) or stamps.dtype == pl.Date):  # epoch or text: from its text form
        stamps = picked["time"]
    time_t = datetime_to_utc(stamps, ctx.options.tz) if frame.height else pl.Series([], dtype=pl.Datetime("us"))
    picked, late = _outside_years(picked.with_columns(time_t=time_t))
    good, bad = series.finish(series.resolve(picked, list(layout.labels), ctx.host_hint))
    bad = pl.concat([late.select("line_no", "reason"), bad.select("line_no", "reason")]).sort("line_no")
    # the raw text of a rejected row: its flat columns, comma-joined
    rows = frame.select(pl.all().gather(bad["line_no"] - offset - 1))
    flat = [_text(rows[c]).fill_null("") for c in rows.columns if not rows.schema[c].is_nested()]
    raw = pl.DataFrame(flat).select(pl.concat_str(pl.all(), separator=","))[:, 0] if flat else [None] * rows.height
    return good, make_rejects(bad["line_no"], raw, bad["reason"].to_list())


def _kept(column: pl.Series, canon: str | None = None) -> pl.Series:
    """A parquet column as the rules downstream read it: its text (_text), except where its own type gives the
    same result for less work (formatting a million timestamps or floats as text and parsing them back is
    most of a Parquet file's cost). Kept as they are: a Datetime or Date time (its text is formed for a
    refused row only), a Float64 value (its text reads back as the same float: series.finish takes it
    as it is) and an integer, boolean or text label (series.resolve reads each distinct one as text)."""
    dtype = column.dtype
    if canon == "time":
        keep = isinstance(dtype, pl.Datetime) or dtype == pl.Date
    elif canon == "value":
        keep = dtype == pl.Float64
    elif canon is None:
        keep = dtype.is_integer() or dtype in (pl.Boolean, pl.Utf8)
    else:
        keep = False
    return column if keep else _text(column)


def _stale(values: pl.Series) -> pl.Series:
    """A float64 column's Prometheus stale markers (a NaN with its own bits), which its text form loses."""
    if values.dtype != pl.Float64:
        return pl.Series("stale", [False] * values.len(), pl.Boolean)
    bits = values.fill_null(0.0).to_numpy().view(np.uint64)
    return pl.Series("stale", bits == series.STALE_NAN_BITS)


def _text(column: pl.Series) -> pl.Series:
    """A flat parquet column as text."""
    try:
        return column.cast(pl.Utf8)
    except pl.exceptions.PolarsError:
        pass
    # rare column types only (bytes that are not UTF-8, durations): value by value
    if column.dtype == pl.Binary:
        return pl.Series(column.name, [None if b is None else b.decode("utf-8", "replace") for b in column], pl.Utf8)
    return pl.Series(column.name, [None if v is None else str(v) for v in column], pl.Utf8)
