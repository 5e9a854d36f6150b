"""nccl-tests stdout (all_reduce_perf, all_gather_perf, ...) -> ``benchmark_results``.

Every data row is read with the layout of the column header line above it
('#  size  count  type  redop  root  time  algbw  busbw  #wrong  time ...'; a
file may hold several runs). Columns vary by version and options: old versions
print redop only for reductions and root only for rooted ops, and leave
alltoall's redop cell empty; current ones print 'redop root' always ('none -1'),
and options add '#bitdiff', per-iteration and timestamp columns. So the header
names the columns: the first and second time (or cputime)/algbw/busbw/#wrong
(or 'error') are the out-of-place and in-place groups. A row must have the
header's column count (one fewer when alltoall's redop cell is empty), numeric
time/algbw/busbw and a number or N/A in #wrong; otherwise it is rejected, e.g.
'nccl-tests data row with 9 of 13 columns' for a row cut short by a crash.
Each row gives time_us_oop, algbw_oop, busbw_oop, time_us_ip, algbw_ip,
busbw_ip with size_bytes; '# Avg bus bandwidth : X' gives avg_busbw (size NULL).
benchmark = 'nccl-tests:<op>' with op from the file name (nccl_allreduce.log,
all_reduce_perf.log -> allreduce), else 'nccl-tests'. host: the hosts named by
'#  Rank  N [Group G] Pid P on <host> device D' lines, ignoring localhost,
comma-joined when several; else ctx.host_hint. Header, comment and 'NCCL
INFO/WARN' lines are skipped; any other line is rejected (a crash message or
stray output must stay visible). run_time: the row's timestamp column when the
header has one, else NULL (the output carries no time). An output that names no
host (no Rank line, or every rank 'on localhost') and has no host from its caller
cannot be credited to a node: its data and average lines are rejected, saying so
(a folder under benchmarks/ is a run, not a host: analysis/ingest/hosts.py).
"""
from __future__ import annotations

import re

import polars as pl

from analysis.ingest.contract import ParseContext, ParseResult
from analysis.ingest.lines import make_rejects
from analysis.ingest.parsers.csvlines import parse_time_any

OPS = ("reducescatter", "allreduce", "allgather", "alltoall", "broadcast", "sendrecv", "hypercube",
       "gather", "scatter", "reduce")
METRICS = ["time_us_oop", "algbw_oop", "busbw_oop", "time_us_ip", "algbw_ip", "busbw_ip"]
_DATA = r"^\s*\d+\s+\d+\s+\S+"
_HEADER = r"^#\s+size\s+count\s+type"
_AVG = r"^#\s*Avg bus bandwidth\s*:\s*(\S+)"
_RANK = r"^#\s+Rank\s+\d+\s+(?:Group\s+\d+\s+)?Pid\s+\d+\s+on\s+(\S+)\s+device"
_NUM = r"^-?\d+(?:\.\d+)?(?:[eE][+-]?\d+)?$"
_WRONG = r"^(?:\d+(?:\.\d+)?(?:e[+-]?\d+)?|N/A)$"  # count of wrong elements ('%6g'), or N/A without -c
_NAMES = {"time": ("time", "cputime"), "algbw": ("algbw",), "busbw": ("busbw",), "wrong": ("#wrong", "error", "wrong")}
_LOCAL = {"localhost", "127.0.0.1", "localhost.localdomain"}
NO_HOST = ("nccl-tests output that names no host (no '#  Rank N ... on <host> device' line, or only localhost): "
           "no node to credit it to; keep the Rank lines nccl-tests prints (in a container, give it the node's "
           "name: docker run --hostname $(hostname))")


def looks_like(lines: pl.DataFrame) -> bool:
    head = lines.head(400)["text"]
    return bool(head.str.contains(_HEADER).any() or head.str.contains(r"^# nThread \d+ nGpus").any())


def op_from_name(name: str) -> str | None:
    stem = name.lower().split(".")[0]
    flat = re.sub(r"^nccl[_-]?|[_-]?perf(?:[_-]?mpi)?$", "", stem).replace("_", "").replace("-", "")
    if flat in OPS:
        return flat
    return next((op for op in OPS if op in stem.replace("_", "").replace("-", "")), None)


def _layouts(headers: pl.DataFrame) -> pl.DataFrame:
    """One row per column-header line: where its columns are. Few lines, so plain Python."""
    rows = []
    for no, text in headers.iter_rows():
        names = text.lstrip("#").split()
        at = {n: [i for i, x in enumerate(names) if x in alts] for n, alts in _NAMES.items()}
        ok = all(len(at[n]) >= 2 for n in ("time", "algbw", "busbw"))
        metric_at = [at[n][g] for g in (0, 1) for n in ("time", "algbw", "busbw")] if ok else [None] * 6
        wrong_at = at["wrong"][:2] if len(at["wrong"]) >= 2 else [None, None]
        stamp = "timestamp" in names  # a 'YYYY-mm-dd HH:MM:SS' stamp (two tokens) ends the row
        rows.append((no, len(names) - stamp, names.index("redop") if "redop" in names else None, ok, stamp,
                     *metric_at, *wrong_at))
    schema = {"hdr": pl.Int64, "width": pl.Int32, "redop_at": pl.Int32, "layout_ok": pl.Boolean,
              "stamp": pl.Boolean, **{f"m{i}": pl.Int32 for i in range(6)}, "w0": pl.Int32, "w1": pl.Int32}
    return pl.DataFrame(rows, schema=schema, orient="row")


def _data_rows(data: pl.DataFrame, tz: str) -> pl.DataFrame:
    """Data lines joined to their header's layout -> tokens read by position, and why a row is refused."""
    tok, n = pl.col("tok"), pl.col("tok").list.len()
    # alltoall in older nccl-tests prints an empty redop cell: a number stands where the op name should
    blank = tok.list.get(pl.col("redop_at"), null_on_oob=True).str.contains(_NUM).fill_null(False)
    data = data.with_columns(shift=blank.cast(pl.Int32))
    cells = n + pl.col("shift")
    # a header naming a timestamp column: rows end with it (two tokens), or lack it in per-iteration mode
    stamped = pl.col("stamp") & (cells == pl.col("width") + 2)
    data = data.with_columns(cells=cells, width_ok=(cells == pl.col("width")) | stamped, stamped=stamped)

    def at(i: pl.Expr) -> pl.Expr:
        pos = i - pl.when(i > pl.col("redop_at")).then(pl.col("shift")).otherwise(0)
        return tok.list.get(pos, null_on_oob=True)

    data = data.with_columns(
        size=tok.list.first().cast(pl.Int64, strict=False),
        **{m: at(pl.col(f"m{i}")).cast(pl.Float64, strict=False) for i, m in enumerate(METRICS)},
        wrong_ok=pl.all_horizontal(at(pl.col(w)).str.contains(_WRONG).fill_null(False) for w in ("w0", "w1"))
        | pl.col("w0").is_null(),
        run_time=pl.when(pl.col("stamped")).then(parse_time_any(pl.concat_str(
            tok.list.get(-2, null_on_oob=True), tok.list.get(-1, null_on_oob=True), separator=" "), tz)))
    values_ok = pl.all_horizontal(pl.col(m).is_not_null() & pl.col(m).is_finite() for m in METRICS)
    why = (pl.when(pl.col("hdr").is_null())
           .then(pl.lit("nccl-tests data row before any column header line ('#  size  count  type ...')"))
           .when(~pl.col("layout_ok")).then(pl.lit("nccl-tests column header without two time/algbw/busbw groups"))
           .when(~pl.col("width_ok"))
           .then(pl.format("nccl-tests data row with {} of {} columns", pl.col("cells"), pl.col("width")))
           .when(pl.col("size").is_null()).then(pl.lit("nccl-tests data row with a size too large for 64 bits"))
           .when(~values_ok | ~pl.col("wrong_ok"))
           .then(pl.lit("nccl-tests data row with a non-numeric time, algbw, busbw or #wrong value")))
    return data.with_columns(why=why)


def parse(lines: pl.DataFrame, ctx: ParseContext) -> ParseResult:
    op = op_from_name(ctx.path.name)
    benchmark = f"nccl-tests:{op}" if op else "nccl-tests"
    hosts = sorted(set(lines["text"].str.extract(_RANK, 1).drop_nulls().to_list()) - _LOCAL)
    host = ",".join(hosts) if hosts else ctx.host_hint
    text = pl.col("text")
    frame = lines.with_columns(
        kind=pl.when(text.str.contains(_DATA)).then(pl.lit("data"))
        .when(text.str.contains(_AVG)).then(pl.lit("avg"))
        .when(text.str.contains(_HEADER)).then(pl.lit("header"))
        .when(text.str.strip_chars() == "").then(pl.lit("blank"))
        .when(text.str.starts_with("#") | text.str.contains(r"\bNCCL (?:INFO|WARN)\b")).then(pl.lit("comment"))
        .otherwise(pl.lit("other")))
    # each data row is read with the layout of the column header above it (a file may hold several runs)
    frame = frame.with_columns(hdr=pl.when(pl.col("kind") == "header").then(pl.col("line_no")).forward_fill())
    layouts = _layouts(frame.filter(pl.col("kind") == "header").select("line_no", "text"))
    data = frame.filter(pl.col("kind") == "data").join(layouts, on="hdr", how="left").with_columns(
        tok=text.str.extract_all(r"\S+"))
    data = _data_rows(data, ctx.options.tz)
    if host is None:  # every result line is refused, with the reason (nothing is lost)
        data = data.with_columns(why=pl.coalesce("why", pl.lit(NO_HOST)))
    good = data.filter(pl.col("why").is_null())
    long = (good.unpivot(on=METRICS, index=["line_no", "size", "run_time"], variable_name="metric")
            .with_columns(order=pl.col("metric").replace_strict(METRICS, list(range(6)), return_dtype=pl.Int32))
            .sort("line_no", "order"))
    avg = frame.filter(pl.col("kind") == "avg").with_columns(
        value=text.str.extract(_AVG, 1).cast(pl.Float64, strict=False), metric=pl.lit("avg_busbw"),
        size=pl.lit(None, pl.Int64), run_time=pl.lit(None, pl.Datetime("us")))
    cols = ["line_no", "metric", "size", "value", "run_time"]
    stored = pl.concat([long.select(cols), avg.filter(pl.col("value").is_finite() & (host is not None)).select(cols)])
    rows = stored.select(
        "run_time", pl.lit(host, pl.Utf8).alias("host"),
        pl.lit(benchmark).alias("benchmark"), "metric", pl.lit(None, pl.Int32).alias("rank"),
        pl.col("size").alias("size_bytes"), pl.lit(None, pl.Int32).alias("sample_idx"), "value", "line_no"
    ).sort("line_no", maintain_order=True)
    bad_avg = avg.filter(~pl.col("value").is_finite().fill_null(False) | (host is None)).with_columns(
        why=pl.lit(NO_HOST if host is None else "unparseable average bus bandwidth"))
    other = frame.filter(pl.col("kind") == "other").with_columns(why=pl.lit("unrecognised line in nccl-tests output"))
    bad = pl.concat([data.filter(pl.col("why").is_not_null()).select("line_no", "text", "why"),
                     bad_avg.select("line_no", "text", "why"), other.select("line_no", "text", "why")]).sort("line_no")
    skipped = frame.filter(pl.col("kind").is_in(["blank", "comment", "header"])).height
    return ParseResult(tables={"benchmark_results": rows},
                       rejects=make_rejects(bad["line_no"], bad["text"], bad["why"]),
                       skipped=skipped, format="nccl-tests")
