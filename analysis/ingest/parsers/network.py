"""Fabric port counters under ``network/`` -> ``telemetry`` rows named as node_exporter names them
(``node_infiniband_<counter>_total{device=..., port=...}``), for analysis/network/counters.py.

Four shapes, told apart by their first non-blank lines:
  * long CSV / Parquet (time, metric, value, labels such as host, device, port as columns):
    analysis/ingest/parsers/telemetry.py;
  * a Prometheus API answer (``/api/v1/query_range`` JSON, saved as it comes): analysis/ingest/parsers/promjson.py;
  * ``perfquery`` text (infiniband-diags): ``# Port counters: Lid 12 port 1 (CapMask: 0x5A00)`` (or
    ``# Port extended counters: ...``) then ``Name:......value`` lines. perfquery prints no time and
    no host: the host is the file's (``network/<host>/...`` or a host in its name) and the time the
    last line above that reads as one (a collector's ``date`` or ISO stamp), else a date in the file
    name (``perfquery-2024-03-05T06:00.txt``, naive UTC), else the file's modification time. PortXmitData/PortRcvData count 4-byte words: stored as bytes.
  * ``ibqueryerrors`` text: ``Errors for [0x<guid>] "<node description>"`` then
    ``GUID 0x<guid> port <n>: [Counter == value] ...``. The host is the description's first word
    (``node01 HCA-1`` -> node01; a switch's ``MF0;leaf-3:SX6036/U1`` -> leaf-3, mapped to the host
    cabled to the port through topology; the time as for perfquery). Aggregate ``port ALL`` lines and ``##`` summaries are skipped.
A reading is cumulative in all: counters.py differences them through resets and saturation.
"""
from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from datetime import datetime
from itertools import chain

import polars as pl

from analysis.ingest.contract import ParseContext, ParseResult
from analysis.ingest.lines import make_rejects
from analysis.ingest.parsers import telemetry
from analysis.ingest.parsers.csvlines import parse_time_any
from analysis.ingest.parts import combine

# PMA counter name -> node_exporter's (analysis/network/counters.py SATURATES uses the latter)
COUNTERS = {
    "SymbolErrorCounter": "symbol_error", "LinkErrorRecoveryCounter": "link_error_recovery",
    "LinkDownedCounter": "link_downed", "PortRcvErrors": "port_receive_errors",
    "PortRcvRemotePhysicalErrors": "port_receive_remote_physical_errors",
    "PortRcvSwitchRelayErrors": "port_receive_switch_relay_errors", "PortXmitDiscards": "port_transmit_discards",
    "PortXmitConstraintErrors": "port_transmit_constraint_errors",
    "PortRcvConstraintErrors": "port_receive_constraint_errors",
    "LocalLinkIntegrityErrors": "local_link_integrity_errors",
    "ExcessiveBufferOverrunErrors": "excessive_buffer_overrun_errors", "VL15Dropped": "vl15_dropped",
    "PortXmitData": "port_data_transmitted_bytes", "PortRcvData": "port_data_received_bytes",
    "PortXmitPkts": "port_packets_transmitted", "PortRcvPkts": "port_packets_received",
    "PortXmitWait": "port_transmit_wait",
}
FIELD = r"^\s*(\w+):\.{2,}\s*(\S+)\s*$"
HEADER = r"^#\s*Port (?:extended )?counters: Lid (\d+) port (\d+)"
ERRORS_FOR = r'^Errors for (?:0x[0-9a-fA-F]+ )?"([^"]*)"'
GUID_PORT = r"^\s*GUID 0x[0-9a-fA-F]+ port (\d+|ALL):\s*(.*)$"


def parse(lines: pl.DataFrame, ctx: ParseContext) -> ParseResult:
    return combine(stream_parts([lines], ctx))


def stream_parts(chunks: Iterable[pl.DataFrame], ctx: ParseContext) -> Iterator[ParseResult]:
    """Long CSV is read chunk by chunk; perfquery and ibqueryerrors text (a few KB per snapshot) whole."""
    chunks = iter(chunks)
    first = next(chunks, None)
    if first is None:
        yield from telemetry.stream_parts([], ctx)
        return
    head = first.filter(pl.col("text").str.strip_chars() != "").head(3)["text"]  # a `date` line may come first
    if (head.str.contains(HEADER) | head.str.contains(FIELD)).any():
        yield _perfquery(pl.concat([first, *chunks]), ctx)
    elif head.str.contains(ERRORS_FOR).any():
        yield _ibqueryerrors(pl.concat([first, *chunks]), ctx)
    else:
        yield from telemetry.stream_parts(chain([first], chunks), ctx)


def parquet_parts(source, ctx: ParseContext) -> Iterator[ParseResult]:
    return telemetry.parquet_parts(source, ctx)


def json_parts(chunks: Iterable[bytes], ctx: ParseContext) -> Iterator[ParseResult]:
    return telemetry.json_parts(chunks, ctx)


def _file_time(ctx: ParseContext) -> datetime:
    """When a snapshot without a time was taken: a date(-time) in the file name, else its modification time."""
    m = re.search(r"(\d{4})-?(\d\d)-?(\d\d)(?:[T_ -]?(\d\d)[:-]?(\d\d)(?:[:-]?(\d\d))?)?", ctx.path.name)
    if m:
        try:
            return datetime(*(int(g or 0) for g in m.groups()))
        except ValueError:
            pass
    return ctx.mtime


def _metric(counter: pl.Expr, device: pl.Expr, port: pl.Expr) -> pl.Expr:
    return pl.concat_str([pl.lit("node_infiniband_"), counter, pl.lit('_total{device="'), device,
                          pl.lit('",port="'), port, pl.lit('"}')])


def _perfquery(lines: pl.DataFrame, ctx: ParseContext) -> ParseResult:
    text = pl.col("text")
    iso = pl.when(text.str.contains(r"^\s*\d{4}-\d\d-\d\d[T ]\d\d:\d\d")).then(
        parse_time_any(text.str.strip_chars(), ctx.options.tz))
    frame = lines.with_columns(  # a `date` line reads like "Mon Mar  4 06:00:01 UTC 2024"
        t=pl.coalesce(iso, _date_line(text, ctx.options.tz)), port=text.str.extract(HEADER, 2),
        f=text.str.extract_groups(FIELD))
    frame = frame.with_columns(t=pl.col("t").forward_fill(),
        port=pl.col("port").forward_fill())
    frame = frame.with_columns(time=pl.col("t").fill_null(pl.lit(_file_time(ctx), pl.Datetime("us"))),
                               name=pl.col("f").struct.field("1"), raw=pl.col("f").struct.field("2"))
    known = frame.filter(pl.col("name").is_in(list(COUNTERS)))
    value = pl.col("raw").cast(pl.Float64, strict=False)
    value = pl.when(pl.col("name").is_in(["PortXmitData", "PortRcvData"])).then(value * 4).otherwise(value)
    rows = known.with_columns(value=value)
    bad = rows.filter(pl.col("value").is_null() | pl.col("port").is_null() | pl.lit(ctx.host_hint is None))
    good = rows.filter(pl.col("value").is_not_null() & pl.col("port").is_not_null() & pl.lit(ctx.host_hint is not None))
    out = good.select("time", host=pl.lit(ctx.host_hint), metric=_metric(
        pl.col("name").replace_strict(COUNTERS), pl.lit(""), pl.col("port")), gpu=pl.lit(None, pl.Int32),
        value="value", line_no="line_no")
    why = ("perfquery output names no host: put it under network/<host>/ or name the host in the file name"
           if ctx.host_hint is None else "counter without a value or a '# Port counters' header above it")
    return ParseResult(tables={"telemetry": out}, rejects=make_rejects(bad["line_no"], bad["text"], [why] * bad.height),
                       skipped=lines.height - rows.height, format="perfquery")


def _date_line(text: pl.Expr, tz: str) -> pl.Expr:
    m = text.str.extract_groups(r"^\s*\w{3}\s+(\w{3})\s+(\d{1,2})\s+(\d\d:\d\d:\d\d)\s+(?:[A-Z]{2,5}\s+)?(\d{4})\s*$")
    months = {m: f"{i:02d}" for i, m in enumerate(["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep",
                                                  "Oct", "Nov", "Dec"], start=1)}
    iso = pl.format("{}-{}-{}T{}", m.struct.field("4"), m.struct.field("1").replace_strict(months, default=None),
                    m.struct.field("2").str.zfill(2), m.struct.field("3"))
    return parse_time_any(iso, tz)


def _ibqueryerrors(lines: pl.DataFrame, ctx: ParseContext) -> ParseResult:
    text = pl.col("text")
    desc = text.str.extract(ERRORS_FOR, 1)
    node = (desc.str.replace(r"^[^;]*;", "").str.extract(r"^([^\s:]+)", 1))
    frame = lines.with_columns(node=node.forward_fill(), g=text.str.extract_groups(GUID_PORT))
    ports = frame.filter(pl.col("g").struct.field("1").is_not_null())
    per_port = ports.filter(pl.col("g").struct.field("1") != "ALL").with_columns(
        c=pl.col("g").struct.field("2").str.extract_all(r"\[(\w+) == (\d+)\]"))
    readings = per_port.explode("c").filter(pl.col("c").is_not_null()).with_columns(
        name=pl.col("c").str.extract(r"\[(\w+) ==", 1), value=pl.col("c").str.extract(r"== (\d+)\]", 1).cast(pl.Float64))
    readings = readings.filter(pl.col("name").is_in(list(COUNTERS)))
    out = readings.select(time=pl.lit(_file_time(ctx), pl.Datetime("us")), host="node", metric=_metric(
        pl.col("name").replace_strict(COUNTERS), pl.lit(""), pl.col("g").struct.field("1")),
        gpu=pl.lit(None, pl.Int32), value="value", line_no="line_no")
    return ParseResult(tables={"telemetry": out}, skipped=lines.height - out["line_no"].n_unique(),
                       format="ibqueryerrors")
