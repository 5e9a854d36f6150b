"""Benchmark outputs -> ``benchmark_results``; the format is detected here.

a. SuperBench results summary, JSON lines: one object per node, {"node": ...,
   "<benchmark>/<metric>[:<rank>]": value, ...}. One row per numeric key:
   benchmark = text before the first '/' (it may hold ':' as in 'nccl-bw:ib'),
   metric = the rest minus a trailing ':<digits>', which becomes rank. A list
   value is per-step samples -> one row per element with sample_idx. Keys
   without '/' (node, time) are not metrics; non-numeric values (strings, bools,
   NaN, nested objects) are left out. A line keeps one disposition: stored if
   any key gave a row; rejected (invalid JSON, no node, no numeric value)
   otherwise. An optional timestamp/time/start_time key gives run_time.
   These files hold one line per node, so json.loads per line is cheap; the
   per-key work is vectorised.
b. SuperBench wide CSV (the 'Raw Data' sheet): header 'node,<key>,<key>...',
   one line per node; unpivoted to the same rows; empty cells give no row.
c. nccl-tests stdout: see nccl_tests.py.
d. Anything else (gpu_burn, perftest, HPL, ...) -> UnrecognisedFormat.
"""
from __future__ import annotations

import json
import math

import polars as pl

from analysis.lines import make_rejects
from analysis.model import ParseContext, ParseResult, UnrecognisedFormat
from analysis.parsers import nccl_tests
from analysis.parsers.csvlines import parse_time_any, split_lines

NODE_KEYS = ("node", "host", "hostname")
TIME_KEYS = ("timestamp", "time", "start_time")
COLUMNS = ["run_time", "host", "benchmark", "metric", "rank", "size_bytes", "sample_idx", "value", "line_no"]


def parse(lines: pl.DataFrame, ctx: ParseContext) -> ParseResult:
    body = lines.filter(pl.col("text").str.strip_chars() != "")
    if body.height == 0:
        return ParseResult(tables={"benchmark_results": _finish(pl.DataFrame(), ctx)}, skipped=lines.height)
    first = body["text"][0].strip()
    if first.startswith("{"):
        return _jsonl(lines, ctx)
    head = [h.strip().strip('"').lower() for h in first.split(",")]
    if len(head) > 1 and head[0] in NODE_KEYS and any("/" in h for h in head[1:]):
        return _wide_csv(lines, ctx)
    if nccl_tests.looks_like(lines):
        return nccl_tests.parse(lines, ctx)
    raise UnrecognisedFormat(
        f"{ctx.path.name}: not a benchmark format this parser reads (SuperBench results JSON lines with a "
        "'node' key, SuperBench wide CSV with a 'node' column, or nccl-tests stdout); "
        f"first line: {first[:80]!r}")


def _numeric(v) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)


def _jsonl(lines: pl.DataFrame, ctx: ParseContext) -> ParseResult:
    cols: dict[str, list] = {"line_no": [], "host": [], "key": [], "sample_idx": [], "value": [], "time": []}
    bad_no, bad_raw, bad_why = [], [], []
    skipped = seen_node = 0
    for no, text in zip(lines["line_no"], lines["text"]):
        if not text.strip():
            skipped += 1
            continue
        try:
            obj = json.loads(text)
        except ValueError as exc:
            bad_no.append(no), bad_raw.append(text), bad_why.append(f"invalid JSON: {exc.msg}")
            continue
        node = next((obj[k] for k in NODE_KEYS if isinstance(obj, dict) and obj.get(k)), None)
        if node is None:
            bad_no.append(no), bad_raw.append(text), bad_why.append("JSON object without a 'node' key")
            continue
        seen_node += 1
        when = next((str(obj[k]) for k in TIME_KEYS if obj.get(k) is not None), None)
        before = len(cols["line_no"])
        for key, val in obj.items():
            if "/" not in key:
                continue
            samples = list(enumerate(val)) if isinstance(val, list) else [(None, val)]
            for idx, v in samples:
                if _numeric(v):
                    for c, x in (("line_no", no), ("host", str(node)), ("key", key), ("sample_idx", idx),
                                 ("value", float(v)), ("time", when)):
                        cols[c].append(x)
        if len(cols["line_no"]) == before:
            bad_no.append(no), bad_raw.append(text), bad_why.append("no numeric benchmark value in this line")
    if not seen_node and bad_no:
        raise UnrecognisedFormat(
            f"{ctx.path.name}: JSON lines without a 'node' key: not a SuperBench results summary "
            "(raw monitor/telemetry JSON is not a benchmark result)")
    frame = pl.DataFrame(cols, schema={"line_no": pl.Int64, "host": pl.Utf8, "key": pl.Utf8,
                                       "sample_idx": pl.Int32, "value": pl.Float64, "time": pl.Utf8})
    frame = frame.with_columns(run_time=parse_time_any(pl.col("time"), ctx.options.tz))
    return ParseResult(tables={"benchmark_results": _finish(frame, ctx)},
                       rejects=make_rejects(bad_no, bad_raw, bad_why), skipped=skipped, format="superbench-jsonl")


def _wide_csv(lines: pl.DataFrame, ctx: ParseContext) -> ParseResult:
    body = lines.filter(pl.col("text").str.strip_chars() != "")
    skipped = lines.height - body.height + 1
    header = split_lines(body.head(1))["fields"].to_list()[0]
    lower = [h.lower() for h in header]
    time_idx = next((lower.index(k) for k in TIME_KEYS if k in lower), None)
    rows = split_lines(body.slice(1))
    n = pl.col("fields").list.len()
    rows = rows.with_columns(
        why=pl.when(pl.col("fields").is_null()).then(pl.lit("broken CSV quoting"))
        .when(n != len(header)).then(pl.format("{} fields, header has {}", n, pl.lit(len(header))))
        .when(pl.col("fields").list.first() == "").then(pl.lit("empty node name")))
    ok = rows.filter(pl.col("why").is_null()).with_columns(
        host=pl.col("fields").list.first(),
        time=pl.col("fields").list.get(time_idx) if time_idx is not None else pl.lit(None, pl.Utf8),
        col=pl.int_ranges(0, pl.col("fields").list.len(), dtype=pl.Int32))
    keys = pl.DataFrame({"col": list(range(len(header))), "key": header}, schema={"col": pl.Int32, "key": pl.Utf8})
    cells = (ok.select("line_no", "host", "time", "fields", "col").explode("fields", "col")
             .join(keys.filter(pl.col("key").str.contains("/", literal=True)), on="col")
             .with_columns(value=pl.col("fields").cast(pl.Float64, strict=False))
             .filter(pl.col("value").is_not_null() & pl.col("value").is_finite()))
    frame = cells.with_columns(sample_idx=pl.lit(None, pl.Int32),
                               run_time=parse_time_any(pl.col("time"), ctx.options.tz)).sort("line_no", "col")
    empty = ok.filter(~pl.col("line_no").is_in(frame["line_no"].unique().implode())).with_columns(
        why=pl.lit("no numeric benchmark value in this row"))
    bad = pl.concat([rows.filter(pl.col("why").is_not_null()), empty.select(rows.columns)]).sort("line_no")
    return ParseResult(tables={"benchmark_results": _finish(frame, ctx)},
                       rejects=make_rejects(bad["line_no"], bad["text"], bad["why"].to_list()),
                       skipped=skipped, format="superbench-csv")


def _finish(frame: pl.DataFrame, ctx: ParseContext) -> pl.DataFrame:
    """(line_no, host, key, sample_idx, value, run_time) -> benchmark_results columns."""
    if frame.height == 0:
        return pl.DataFrame(schema={"run_time": pl.Datetime("us"), "host": pl.Utf8, "benchmark": pl.Utf8,
                                    "metric": pl.Utf8, "rank": pl.Int32, "size_bytes": pl.Int64,
                                    "sample_idx": pl.Int32, "value": pl.Float64, "line_no": pl.Int64})
    rest = pl.col("key").str.splitn("/", 2).struct.field("field_1")
    return frame.with_columns(
        benchmark=pl.col("key").str.splitn("/", 2).struct.field("field_0"),
        metric=rest.str.replace(r":\d+$", ""),
        rank=rest.str.extract(r":(\d+)$", 1).cast(pl.Int32),
        size_bytes=pl.lit(None, pl.Int64),
    ).select(COLUMNS)
