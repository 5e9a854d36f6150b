"""nccl-tests stdout (all_reduce_perf, all_gather_perf, ...) -> ``benchmark_results``.

A data row is ``size count type [redop] [root] time algbw busbw #wrong time
algbw busbw #wrong``: redop is absent for allgather and blank for alltoall,
root only exists for reduce/broadcast, so the column count varies (11-13). The
first token is always the size and the last eight are always the
out-of-place/in-place (time, algbw, busbw, #wrong) groups, which is what we
read; #wrong may be a number or N/A and is not stored. Each row gives
time_us_oop, algbw_oop, busbw_oop, time_us_ip, algbw_ip, busbw_ip with
size_bytes; '# Avg bus bandwidth : X' gives avg_busbw (size NULL).
benchmark = 'nccl-tests:<op>' with op from the file name (nccl_allreduce.log,
all_reduce_perf.log -> allreduce), else 'nccl-tests'. host: the hosts named by
'#  Rank  N [Group G] Pid P on <host> device D' lines, ignoring localhost,
comma-joined when several; else ctx.host_hint. Comments and 'NCCL INFO/WARN'
lines are skipped; any other line is rejected (a crash message or stray output
must stay visible). Output carries no timestamps: run_time is NULL.
"""
from __future__ import annotations

import re

import polars as pl

from analysis.lines import make_rejects
from analysis.model import ParseContext, ParseResult

OPS = ("reducescatter", "allreduce", "allgather", "alltoall", "broadcast", "sendrecv", "hypercube",
       "gather", "scatter", "reduce")
METRICS = ["time_us_oop", "algbw_oop", "busbw_oop", "time_us_ip", "algbw_ip", "busbw_ip"]
_DATA = r"^\s*\d+\s+\d+\s+\S+"
_HEADER = r"^#\s+size\s+count\s+type"
_AVG = r"^#\s*Avg bus bandwidth\s*:\s*(\S+)"
_RANK = r"^#\s+Rank\s+\d+\s+(?:Group\s+\d+\s+)?Pid\s+\d+\s+on\s+(\S+)\s+device"
_LOCAL = {"localhost", "127.0.0.1", "localhost.localdomain"}


def looks_like(lines: pl.DataFrame) -> bool:
    head = lines.head(400)["text"]
    return bool(head.str.contains(_HEADER).any() or head.str.contains(r"^# nThread \d+ nGpus").any())


def op_from_name(name: str) -> str | None:
    stem = name.lower().split(".")[0]
    flat = re.sub(r"^nccl[_-]?|[_-]?perf(?:[_-]?mpi)?$", "", stem).replace("_", "").replace("-", "")
    if flat in OPS:
        return flat
    return next((op for op in OPS if op in stem.replace("_", "").replace("-", "")), None)


def parse(lines: pl.DataFrame, ctx: ParseContext) -> ParseResult:
    op = op_from_name(ctx.path.name)
    benchmark = f"nccl-tests:{op}" if op else "nccl-tests"
    hosts = sorted(set(lines["text"].str.extract(_RANK, 1).drop_nulls().to_list()) - _LOCAL)
    host = ",".join(hosts) if hosts else ctx.host_hint
    text = pl.col("text")
    frame = lines.with_columns(
        kind=pl.when(text.str.contains(_DATA)).then(pl.lit("data"))
        .when(text.str.contains(_AVG)).then(pl.lit("avg"))
        .when(text.str.strip_chars() == "").then(pl.lit("blank"))
        .when(text.str.starts_with("#") | text.str.contains(r"\bNCCL (?:INFO|WARN)\b")).then(pl.lit("comment"))
        .otherwise(pl.lit("other")))
    data = frame.filter(pl.col("kind") == "data").with_columns(tok=text.str.extract_all(r"\S+"))
    data = data.with_columns(
        size=pl.col("tok").list.first().cast(pl.Int64, strict=False),
        vals=pl.col("tok").list.slice(-8).list.gather([0, 1, 2, 4, 5, 6]),
        ntok=pl.col("tok").list.len())
    long = (data.filter(pl.col("ntok") >= 10)
            .with_columns(metric=pl.lit(METRICS)).explode("vals", "metric")
            .with_columns(value=pl.col("vals").cast(pl.Float64, strict=False))
            .filter(pl.col("value").is_not_null()))
    avg = frame.filter(pl.col("kind") == "avg").with_columns(
        value=text.str.extract(_AVG, 1).cast(pl.Float64, strict=False), metric=pl.lit("avg_busbw"),
        size=pl.lit(None, pl.Int64))
    stored = pl.concat([long.select("line_no", "metric", "size", "value"),
                        avg.filter(pl.col("value").is_not_null()).select("line_no", "metric", "size", "value")])
    rows = stored.select(
        pl.lit(None, pl.Datetime("us")).alias("run_time"), pl.lit(host, pl.Utf8).alias("host"),
        pl.lit(benchmark).alias("benchmark"), "metric", pl.lit(None, pl.Int32).alias("rank"),
        pl.col("size").alias("size_bytes"), pl.lit(None, pl.Int32).alias("sample_idx"), "value", "line_no"
    ).sort("line_no")
    stored_lines = set(rows["line_no"].to_list())
    bad = frame.filter(pl.col("kind").is_in(["data", "avg", "other"]) & ~pl.col("line_no").is_in(stored_lines))
    bad = bad.with_columns(why=pl.when(pl.col("kind") == "data").then(pl.lit("nccl-tests data row without numeric results"))
                           .when(pl.col("kind") == "avg").then(pl.lit("unparseable average bus bandwidth"))
                           .otherwise(pl.lit("unrecognised line in nccl-tests output")))
    skipped = frame.filter(pl.col("kind").is_in(["blank", "comment"])).height
    return ParseResult(tables={"benchmark_results": rows},
                       rejects=make_rejects(bad["line_no"], bad["text"], bad["why"].to_list()),
                       skipped=skipped, format="nccl-tests")
