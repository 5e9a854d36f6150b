"""Long-format telemetry (time, host, metric, value[, gpu]) -> ``telemetry``.

CSV through ``parse(lines, ctx)``, Parquet through ``parse_parquet(data, ctx)``
(line_no = 1-based row number: the engine counts parquet rows as lines).
Telemetry files are large (one row per sample per metric per GPU), so the CSV
path is vectorised: plain lines are split with ``str.split``; only lines with a
double quote go through the csv module (a quoted field cannot span lines here).

Columns are matched by header name, any order and case. A file without a host
column is accepted when its name/folder names the host (ctx.host_hint).
time: ISO 8601 with or without zone, or epoch s/ms; naive stamps are in
ctx.options.tz. Rejected: unparseable time, empty host/metric, a value that is
not a finite number, a gpu that is not an integer ('3' and 'gpu3' are read as 3).
Header lines repeated inside the file (concatenated exports) are skipped.
"""
from __future__ import annotations

import io

from pathlib import Path

import polars as pl

from analysis.lines import make_rejects
from analysis.model import ParseContext, ParseResult, UnrecognisedFormat
from analysis.parsers.csvlines import datetime_to_utc, match_header, parse_time_any, split_lines

ALIASES: dict[str, tuple[str, ...]] = {
    "time": ("timestamp", "ts", "datetime", "date_time", "time_utc", "sample_time"),
    "host": ("node", "hostname", "node_name", "instance"),
    "metric": ("name", "metric_name", "field", "counter"),
    "value": ("val", "metric_value", "reading"),
    "gpu": ("gpu_id", "gpu_index", "gpu_idx", "device", "index"),
}
COLUMNS = ["time", "host", "metric", "gpu", "value", "line_no"]


def _require(cols: dict[str, int] | list[str], host_hint: str | None, what: str) -> None:
    missing = [c for c in ("time", "metric", "value") if c not in cols]
    if "host" not in cols and not host_hint:
        missing.append("host")
    if missing:
        raise UnrecognisedFormat(
            f"not long-format telemetry {what}: no {', '.join(missing)} column "
            "(expected time, host, metric, value[, gpu]; host may come from the file name)")


def parse(lines: pl.DataFrame, ctx: ParseContext) -> ParseResult:
    body = lines.filter(pl.col("text").str.strip_chars() != "")
    skipped = lines.height - body.height
    if body.height == 0:
        return ParseResult(tables={"telemetry": _empty()}, skipped=skipped, format="telemetry-csv")
    head_text = body["text"][0]
    header = split_lines(body.head(1))["fields"].to_list()[0] or []
    cols = match_header(header, ALIASES)
    _require(cols, ctx.host_hint, "CSV")
    width = len(header)
    rows = split_lines(body.slice(1))
    is_header = pl.col("text") == head_text
    skipped += 1 + rows.filter(is_header).height
    rows = rows.filter(~is_header)
    n = pl.col("fields").list.len()
    ok_shape = (n == width) | ((n > width) & (pl.col("fields").list.slice(width).list.join("") == ""))
    shape = rows.with_columns(
        reason=pl.when(pl.col("fields").is_null()).then(pl.lit("broken CSV quoting"))
        .when(~ok_shape).then(pl.format("{} fields, header has {}", n, pl.lit(width))))
    bad_shape = shape.filter(pl.col("reason").is_not_null())
    good = shape.filter(pl.col("reason").is_null())
    picked = good.select(
        "line_no", pl.col("text").alias("raw"),
        *[pl.col("fields").list.get(cols[c]).alias(c) if c in cols else pl.lit(None, pl.Utf8).alias(c)
          for c in ALIASES])
    picked = picked.with_columns(time_t=_distinct_times(picked["time"], ctx.options.tz))
    result = _finish(picked, ctx.host_hint, "telemetry-csv")
    result.rejects = pl.concat([
        make_rejects(bad_shape["line_no"], bad_shape["text"], bad_shape["reason"].to_list()),
        result.rejects]).sort("line_no")
    result.skipped = skipped
    return result


def _distinct_times(texts: pl.Series, tz: str) -> pl.Series:
    """parse_time_any once per distinct text: one sample time covers every metric and GPU of a host."""
    distinct = texts.unique().to_frame("time").with_columns(t=parse_time_any(pl.col("time"), tz))
    return texts.to_frame("time").join(distinct, on="time", how="left", maintain_order="left")["t"]


def parse_parquet(data: bytes, ctx: ParseContext) -> ParseResult:
    """``data``: the file's bytes, already decompressed when it was gzipped."""
    try:
        frame = pl.read_parquet(io.BytesIO(data))
    except (pl.exceptions.PolarsError, pl.exceptions.PanicException, OSError, ValueError):
        # the engine has read the footer already, so this is damage inside the column data
        raise UnrecognisedFormat("not a readable Parquet file: its footer reads but its column data is damaged "
                                 "(truncated or corrupted copy?)") from None
    cols = match_header(frame.columns, ALIASES)
    _require(cols, ctx.host_hint, f"parquet ({', '.join(frame.columns[:8])})")
    names = {c: frame.columns[i] for c, i in cols.items()}
    for canon, name in names.items():
        if frame.schema[name].is_nested():
            raise UnrecognisedFormat(f"not long-format telemetry parquet: column '{name}' ({canon}) holds "
                                     f"{frame.schema[name]} values, not one value per row")
    text = {c: _text(frame[names[c]]) if c in names else pl.Series(c, [None] * frame.height, pl.Utf8)
            for c in ALIASES}
    picked = pl.DataFrame({"line_no": pl.int_range(1, frame.height + 1, eager=True, dtype=pl.Int64),
                           "raw": pl.Series([None] * frame.height, dtype=pl.Utf8), **text})
    stamps = frame[names["time"]]
    if not (isinstance(stamps.dtype, pl.Datetime) or stamps.dtype == pl.Date):  # epoch or text: from its text form
        stamps = text["time"]
    time_t = datetime_to_utc(stamps, ctx.options.tz) if frame.height else pl.Series([], dtype=pl.Datetime("us"))
    result = _finish(picked.with_columns(time_t=time_t), ctx.host_hint, "telemetry-parquet")
    if result.rejects.height:  # the raw text of a rejected row: its flat columns, comma-joined
        bad = frame.select(pl.all().gather(result.rejects["line_no"] - 1))
        flat = [_text(bad[c]).fill_null("") for c in bad.columns if not bad.schema[c].is_nested()]
        raw = pl.DataFrame(flat).select(pl.concat_str(pl.all(), separator=","))[:, 0] if flat else [None] * bad.height
        result.rejects = make_rejects(result.rejects["line_no"], raw, result.rejects["reason"])
    return result


def _text(series: pl.Series) -> pl.Series:
    """A flat parquet column as text."""
    try:
        return series.cast(pl.Utf8)
    except pl.exceptions.PolarsError:
        pass
    # rare column types only (bytes that are not UTF-8, durations): value by value
    if series.dtype == pl.Binary:
        return pl.Series(series.name, [None if b is None else b.decode("utf-8", "replace") for b in series], pl.Utf8)
    return pl.Series(series.name, [None if v is None else str(v) for v in series], pl.Utf8)


def _finish(picked: pl.DataFrame, host_hint: str | None, fmt: str) -> ParseResult:
    """Validate the picked Utf8 columns (plus parsed time_t) into rows and rejects."""
    value = pl.col("value").str.strip_chars().cast(pl.Float64, strict=False)
    gpu_txt = pl.col("gpu").str.strip_chars().str.to_lowercase()
    gpu = gpu_txt.str.extract(r"^(?:gpu)?[ _:-]?(\d+)(?:\.0+)?$", 1).cast(pl.Int32, strict=False)
    rows = picked.with_columns(
        host=pl.col("host").str.strip_chars().replace("", None).fill_null(pl.lit(host_hint, pl.Utf8)),
        metric=pl.col("metric").str.strip_chars().replace("", None),
        value_f=value, gpu_i=gpu)
    reason = (
        pl.when(pl.col("time_t").is_null()).then(pl.format("unparseable time '{}'", pl.col("time").fill_null("")))
        .when(pl.col("host").is_null()).then(pl.lit("empty host"))
        .when(pl.col("metric").is_null()).then(pl.lit("empty metric"))
        .when(pl.col("value_f").is_null() | pl.col("value_f").is_nan() | pl.col("value_f").is_infinite())
        .then(pl.format("non-numeric value '{}'", pl.col("value").fill_null("")))
        .when(pl.col("gpu").is_not_null() & (pl.col("gpu").str.strip_chars() != "") & pl.col("gpu_i").is_null())
        .then(pl.format("gpu '{}' is not an integer index", pl.col("gpu"))))
    rows = rows.with_columns(reason=reason)
    bad = rows.filter(pl.col("reason").is_not_null())
    good = rows.filter(pl.col("reason").is_null()).select(
        pl.col("time_t").alias("time"), "host", "metric", pl.col("gpu_i").alias("gpu"),
        pl.col("value_f").alias("value"), "line_no")
    return ParseResult(tables={"telemetry": good},
                       rejects=make_rejects(bad["line_no"], bad["raw"], bad["reason"].to_list()), format=fmt)


def _empty() -> pl.DataFrame:
    return pl.DataFrame(schema={"time": pl.Datetime("us"), "host": pl.Utf8, "metric": pl.Utf8,
                                "gpu": pl.Int32, "value": pl.Float64, "line_no": pl.Int64})
