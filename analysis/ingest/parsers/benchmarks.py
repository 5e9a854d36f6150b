"""Benchmark outputs -> ``benchmark_results``; the format is detected here.

a. SuperBench results summary, JSON lines: one object per node, {"node": ...,
   "<benchmark>/<metric>[:<rank>]": value, ...}. One row per numeric key:
   benchmark = text before the first '/' (it may hold ':' as in 'nccl-bw:ib'),
   metric = the rest minus a trailing ':<digits>', which becomes rank. A list
   value is per-step samples -> one row per element with sample_idx. Keys
   without '/' (node, time) are not metrics; non-numeric values (strings, bools,
   NaN, nested objects) are left out. A line keeps one disposition: stored if
   any key gave a row; rejected otherwise (invalid or cut-off JSON, nested
   deeper than 64 levels, a number beyond a 64-bit float, no 'node' string, no
   numeric value). An optional timestamp/time/start_time key gives run_time;
   without one, the time goodput.yaml's benchmark_run_times gives the file's run
   (ctx.run_time), else none (the criteria then date the run by its files' mtime).
   Decoding is bulk (analysis.ingest.parsers.jsonlines: one polars call for the file,
   json.loads only for the lines polars cannot read), then unpivoted.
b. SuperBench wide CSV (the 'Raw Data' sheet): header 'node,<key>,<key>...',
   one line per node; unpivoted to the same rows; empty cells give no row.
c. nccl-tests stdout: see nccl_tests.py.
d. Anything else (gpu_burn, perftest, HPL, ...) -> UnrecognisedFormat.
"""
from __future__ import annotations

import math

import polars as pl

from analysis.ingest.contract import ParseContext, ParseResult, UnrecognisedFormat
from analysis.ingest.lines import make_rejects
from analysis.ingest.parsers import batched, jsonlines, nccl_tests
from analysis.ingest.parsers.csvlines import parse_time_any, split_lines

NODE_KEYS = ("node", "host", "hostname")
TIME_KEYS = ("timestamp", "time", "start_time")
_RANK = r":(\d{1,9})$"  # a rank suffix; a longer digit run cannot be a rank and stays in the metric
COLUMNS = ["run_time", "host", "benchmark", "metric", "rank", "size_bytes", "sample_idx", "value", "line_no"]


def parse(lines: pl.DataFrame, ctx: ParseContext) -> ParseResult:
    return batched.single(parse_batch(batched.numbered(lines), [ctx]))


def parse_batch(lines: pl.DataFrame, ctxs: list[ParseContext]) -> batched.BatchResult:
    """Many benchmark outputs at once (analysis.ingest.parsers.batched): the SuperBench JSON lines of every file
    are decoded together; other formats are read file by file."""
    text = pl.col("text").str.strip_chars()
    firsts = lines.filter(text != "").group_by("fid", maintain_order=True).agg(text.first())
    first_of = dict(zip(firsts["fid"].to_list(), firsts["text"].to_list()))
    result = batched.BatchResult(tables={"benchmark_results": _finish(pl.DataFrame(), ctxs[0])})
    jsonl = [fid for fid, first in first_of.items() if first.startswith("{")]
    by_file = lines.partition_by("fid", as_dict=True) if len(first_of) > len(jsonl) else {}
    for fid, ctx in enumerate(ctxs):
        if fid not in first_of:
            result.skipped[fid], result.formats[fid] = int((lines["fid"] == fid).sum()), None
        elif fid not in jsonl:
            _add(result, fid, by_file[(fid,)], ctx, first_of[fid])
    for fids in _chunks(lines, jsonl):
        part = lines.filter(pl.col("fid").is_in(fids)) if len(fids) < len(ctxs) else lines
        _add(result, None, part, ctxs, None)
    given = [c.run_time for c in ctxs]
    if any(given):  # a result without a time takes its run's from benchmark_run_times (ctx.run_time)
        rows = result.tables["benchmark_results"]
        result.tables["benchmark_results"] = rows.with_columns(run_time=pl.coalesce(
            "run_time", batched.per_file(given, pl.Datetime("us"), batched.fid_of(pl.col("line_no")))))
    return result


JSONL_CHUNK = 4 * 1024**2  # bytes of JSON lines decoded together: beyond, a bigger block only costs more


def _chunks(lines: pl.DataFrame, fids: list[int]) -> list[list[int]]:
    """The JSON-lines files in runs of about JSONL_CHUNK bytes (a big file alone)."""
    if len(fids) < 2:
        return [fids] if fids else []
    sizes = lines.filter(pl.col("fid").is_in(fids)).group_by("fid").agg(pl.col("text").str.len_bytes().sum())
    size = dict(zip(sizes["fid"].to_list(), sizes["text"].to_list()))
    chunks, run, total = [], [], 0
    for fid in fids:
        if run and total + size.get(fid, 0) > JSONL_CHUNK:
            chunks.append(run)
            run, total = [], 0
        run.append(fid)
        total += size.get(fid, 0)
    return chunks + [run]


def _add(result: batched.BatchResult, fid: int | None, lines: pl.DataFrame, ctx, first: str | None) -> None:
    """One file's results (fid; ``first``: its first non-blank line), or the JSON-lines files' (fid None)."""
    if fid is None:
        one = _jsonl(lines, ctx)
    else:
        try:
            one = _one(lines, ctx, first)
        except UnrecognisedFormat as exc:
            result.unrecognised[fid] = str(exc)
            return
        one = batched.BatchResult(one.tables, one.rejects, {fid: one.skipped}, {fid: one.merged}, {fid: one.format})
    result.tables["benchmark_results"] = pl.concat([result.tables["benchmark_results"],
                                                    one.tables["benchmark_results"]], how="vertical_relaxed")
    result.rejects = pl.concat([result.rejects, one.rejects], how="vertical_relaxed")
    for field in ("skipped", "merged", "formats", "unrecognised"):
        getattr(result, field).update(getattr(one, field))


def _one(lines: pl.DataFrame, ctx: ParseContext, first: str) -> ParseResult:
    """A file in another format than JSON lines."""
    first = first.strip()
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


_NUMBER = (pl.Float64, pl.Float32, pl.Int8, pl.Int16, pl.Int32, pl.Int64, pl.Int128, pl.UInt8, pl.UInt16,
           pl.UInt32, pl.UInt64)
_META = {"line_no": pl.Int64, "host": pl.Utf8, "time": pl.Utf8}  # one row per decoded line
_VALUES = {"line_no": pl.Int64, "key": pl.Utf8, "col": pl.Int32, "sample_idx": pl.Int32, "value": pl.Float64}


def _jsonl(lines: pl.DataFrame, ctxs: list[ParseContext]) -> batched.BatchResult:
    body = lines.filter(pl.col("text").str.strip_chars() != "")
    decoded = jsonlines.decode(body)
    metas, values, ambiguous = [], [], []
    for frame in decoded.frames:
        texts = frame.select("line_no").join(body, on="line_no", how="left", maintain_order="left")["text"]
        meta, vals, mixed = _from_frame(frame, texts)
        metas.append(meta), values.append(vals), ambiguous.append(mixed)
    # a key holding text on some lines and numbers or objects on others: polars reads it all as text, so
    # the lines where it is not text are read exactly
    mixed = pl.concat(ambiguous) if ambiguous else pl.Series("line_no", [], pl.Int64)
    again = jsonlines.decode(body.filter(pl.col("line_no").is_in(mixed.implode())), python=True)
    meta, vals = _from_objects(decoded.objects + again.objects)
    meta = pl.concat([*[m.filter(~pl.col("line_no").is_in(mixed.implode())) for m in metas], meta])
    vals = pl.concat([*[v.filter(~pl.col("line_no").is_in(mixed.implode())) for v in values], vals])
    vals = vals.filter(pl.col("value").is_finite())
    meta = meta.with_columns(stored=pl.col("host").is_not_null()
                             & pl.col("line_no").is_in(vals["line_no"].unique().implode()))
    why = (pl.when(pl.col("host").is_null()).then(pl.lit("JSON object without a 'node' key (a host name)"))
           .otherwise(pl.lit("no numeric benchmark value in this line")))
    bad = meta.filter(~pl.col("stored")).join(body, on="line_no").with_columns(why=why)
    rejects = pl.concat([decoded.rejects, again.rejects, make_rejects(bad["line_no"], bad["text"], bad["why"])])
    named = batched.counts(batched.fid_of(meta.filter(pl.col("host").is_not_null())["line_no"]))
    refused = batched.counts(batched.fid_of(rejects["line_no"]))
    files = batched.counts(lines["fid"])
    # a file without a node in any line is no SuperBench summary: none of its lines is read
    unrecognised = {fid: f"{ctxs[fid].path.name}: JSON lines without a 'node' key: not a SuperBench results "
                         "summary (raw monitor/telemetry JSON is not a benchmark result)"
                    for fid in files if not named.get(fid) and refused.get(fid)}
    # times are parsed once per line, not once per value (a line holds hundreds); a line's samples of a
    # key (sample_idx) are in order already: the sort only interleaves keys and lines
    meta = meta.filter(pl.col("stored")).with_columns(run_time=parse_time_any(pl.col("time"), ctxs[0].options.tz))
    rows = vals.join(meta.select("line_no", "host", "run_time"), on="line_no")
    blank = batched.counts(lines.filter(pl.col("text").str.strip_chars() == "")["fid"])
    return batched.BatchResult(tables={"benchmark_results": _finish(rows.sort("line_no", "col", maintain_order=True), ctxs[0])},
                             rejects=rejects.sort("line_no"), skipped={fid: blank.get(fid, 0) for fid in files},
                             formats=dict.fromkeys(files, "superbench-jsonl"), unrecognised=unrecognised)


def _text(frame: pl.DataFrame, keys: tuple[str, ...], node: bool) -> pl.Expr:
    """The first of ``keys`` that is set, as text. A node must be a non-empty
    string; a time may be a string or an epoch number."""
    types = (pl.Utf8,) if node else (pl.Utf8, *_NUMBER)
    picks = [pl.col(k).cast(pl.Utf8) for k in keys if k in frame.columns and frame.schema[k] in types]
    picks = [p.replace("", None) for p in picks] if node else picks
    return pl.coalesce(picks) if picks else pl.lit(None, pl.Utf8)


def _from_frame(frame: pl.DataFrame, texts: pl.Series) -> tuple[pl.DataFrame, pl.DataFrame, pl.Series]:
    """A decoded block and its lines' text -> (meta, values, lines to read again).
    values: one row per numeric key and list element, NaN/inf included (the
    caller filters). A key holding text on some lines and numbers, objects or
    bools on others is read by polars as text with the others written out; the
    lines where that matters are read again exactly: a metric whose text reads
    as a number, a node that looks like a number, object or bool and is not
    quoted in the line. (A time reads the same either way.)"""
    meta = frame.select("line_no", host=_text(frame, NODE_KEYS, node=True), time=_text(frame, TIME_KEYS, node=False))
    parts, ambiguous, scalars = [], [], []
    for i, (key, dtype) in enumerate(frame.schema.items()):
        if dtype == pl.Utf8 and key in NODE_KEYS:
            odd = frame[key].str.contains(r"^(?:[\[{0-9-]|true$|false$)").fill_null(False)
            unquoted = texts.filter(odd).str.contains(r'"' + pl.escape_regex(key) + r'"\s*:\s*[^"\s]')
            ambiguous.append(frame["line_no"].filter(odd).filter(unquoted))
        if "/" not in key:
            continue
        inner = dtype.inner if isinstance(dtype, pl.List) else dtype
        if inner == pl.Utf8:
            probe = frame.select("line_no", pl.col(key).alias("v"))
            probe = probe.explode("v") if isinstance(dtype, pl.List) else probe
            hit = probe.filter(pl.col("v").str.strip_chars().cast(pl.Float64, strict=False).is_not_null())
            ambiguous.append(hit["line_no"])
        elif isinstance(dtype, pl.List) and inner in _NUMBER:
            one = frame.select("line_no", value=pl.col(key).cast(pl.List(pl.Float64)),
                               sample_idx=pl.int_ranges(0, pl.col(key).list.len(), dtype=pl.Int32))
            parts.append(one.explode("value", "sample_idx").with_columns(key=pl.lit(key), col=pl.lit(i, pl.Int32)))
        elif dtype in _NUMBER:
            scalars.append((i, key))
        # bool, object, null and nested-list columns hold no benchmark value
    if scalars:
        cols = pl.DataFrame({"key": [k for _, k in scalars], "col": [i for i, _ in scalars]},
                            schema={"key": pl.Utf8, "col": pl.Int32})
        wide = frame.select("line_no", *[pl.col(k).cast(pl.Float64) for _, k in scalars])
        long = wide.unpivot(index="line_no", variable_name="key", value_name="value").join(cols, on="key")
        parts.append(long.with_columns(sample_idx=pl.lit(None, pl.Int32)))
    values = pl.concat([p.select(list(_VALUES)) for p in parts]) if parts else pl.DataFrame(schema=_VALUES)
    mixed = pl.concat(ambiguous).unique() if ambiguous else pl.Series("line_no", [], pl.Int64)
    return meta, values, mixed


def _from_objects(objects: list[tuple[int, str, object]]) -> tuple[pl.DataFrame, pl.DataFrame]:
    """Lines read by json.loads (few: those polars could not decode) -> the same meta and values."""
    meta: dict[str, list] = {k: [] for k in _META}
    vals: dict[str, list] = {k: [] for k in _VALUES}
    for no, _, obj in objects:
        for c, x in zip(_META, (no, next((obj[k] for k in NODE_KEYS if isinstance(obj.get(k), str) and obj[k]), None),
                                next((jsonlines.as_text(obj[k]) for k in TIME_KEYS if obj.get(k) is not None), None))):
            meta[c].append(x)
        for i, (key, val) in enumerate(obj.items()):
            if "/" not in key:
                continue
            for idx, v in (enumerate(val) if isinstance(val, list) else [(None, val)]):
                if _numeric(v):
                    for c, x in zip(_VALUES, (no, key, i, idx, float(v))):
                        vals[c].append(x)
    return pl.DataFrame(meta, schema=_META), pl.DataFrame(vals, schema=_VALUES)


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
    ok = ok.with_columns(run_time=parse_time_any(pl.col("time"), ctx.options.tz))  # once per row, not per cell
    keys = pl.DataFrame({"col": list(range(len(header))), "key": header}, schema={"col": pl.Int32, "key": pl.Utf8})
    cells = (ok.select("line_no", "host", "run_time", "fields", "col").explode("fields", "col")
             .join(keys.filter(pl.col("key").str.contains("/", literal=True)), on="col")
             .with_columns(value=pl.col("fields").cast(pl.Float64, strict=False))
             .filter(pl.col("value").is_not_null() & pl.col("value").is_finite()))
    frame = cells.with_columns(sample_idx=pl.lit(None, pl.Int32)).sort("line_no", "col")
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
    keys = frame.select(pl.col("key").unique()).with_columns(  # a few hundred keys, millions of values
        benchmark=pl.col("key").str.splitn("/", 2).struct.field("field_0"),
        metric=rest.str.replace(_RANK, ""),
        rank=rest.str.extract(_RANK, 1).cast(pl.Int32))
    return frame.join(keys, on="key", how="left", maintain_order="left").with_columns(
        size_bytes=pl.lit(None, pl.Int64)).select(COLUMNS)
