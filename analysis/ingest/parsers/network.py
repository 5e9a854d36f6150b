"""Fabric port counters under ``network/`` -> ``telemetry`` rows named as node_exporter names them
(``node_infiniband_<counter>_total{device=..., port=...}``), for analysis/network/counters.py.

Four shapes, told apart by their first non-blank lines:
  * long CSV / Parquet (time, metric, value, labels such as host, device, port as columns):
    analysis/ingest/parsers/telemetry.py;
  * a Prometheus API answer (``/api/v1/query_range`` JSON, saved as it comes): analysis/ingest/parsers/promjson.py;
  * ``perfquery`` text (infiniband-diags): ``# Port counters: Lid 12 port 1 (CapMask: 0x5A00)`` (or
    ``# Port extended counters: ...``) then ``Name:......value`` lines. perfquery prints no time and
    no host: the host is the file's (``network/<host>/...`` or a host in its name; a dated name such as
    ``perfquery-2024-03-05T06:00.txt`` names none, analysis/ingest/hosts.py) and the time the
    last line above that reads as one (a collector's ``date`` or ISO stamp), else a date in the file
    name (``perfquery-2024-03-05T06:00.txt``, naive UTC), else the file's modification time. PortXmitData/PortRcvData count 4-byte words: stored as bytes.
  * ``ibqueryerrors`` text: ``Errors for [0x<guid>] "<node description>"`` then
    ``GUID 0x<guid> port <n>: [Counter == value] ...``. The host is the description's first word
    (``node01 HCA-1`` -> node01; a switch's ``MF0;leaf-3:SX6036/U1`` -> leaf-3, mapped to the host
    cabled to the port through topology; the time as for perfquery). Aggregate ``port ALL`` lines and ``##`` summaries are skipped.
A reading is cumulative in all: counters.py differences them through resets and saturation.
Strict where the text lies: a counter without a value, a value that is no unsigned integer below 2^64 (IB
counters are unsigned, at most 64-bit), a cut-off counter name, a perfquery line that is none of a
``Name:....value`` line, a ``#`` header and a date line, an ibqueryerrors port line whose readings are not all
``[Counter == value]``, and a time outside options.YEARS are rejects with their reason, never skipped.
"""
from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from datetime import datetime
from itertools import chain

import polars as pl

from analysis.ingest.contract import ParseContext, ParseResult
from analysis.ingest.lines import make_rejects
from analysis.ingest.options import YEARS
from analysis.ingest.parsers import telemetry
from analysis.ingest.parsers.csvlines import parse_time_any
from analysis.ingest.parts import combine
from analysis.ingest.timeutil import in_years

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
# a FIELD cut off or garbled after its name: a reject when it names a counter
LOOSE_FIELD = r"^\s*(\w+):\.*\s*(.*?)\s*$"
# A name that is the start of a counter's (SymbolErr:....3): a line cut off and glued, not another counter
_CUT = {name[:i]: name for name in COUNTERS for i in range(4, len(name))}
READING = r"\[(\w+) == (\d+)(?: \([^)\]]*\))?\]"  # ibqueryerrors' [Counter == value], with --data a "(4.82 KB)" too
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


def file_time(ctx: ParseContext) -> datetime:
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
    frame = lines.with_columns(  # a `date` line reads like "Mon Mar  4 06:00:01 UTC 2024"
        t=stamp_line(text, ctx.options.tz), port=text.str.extract(HEADER, 2),
        f=text.str.extract_groups(LOOSE_FIELD), strict=text.str.contains(FIELD))
    frame = frame.with_columns(is_time=pl.col("t").is_not_null(), t=pl.col("t").forward_fill(),
                               port=pl.col("port").forward_fill())
    frame = frame.with_columns(time=pl.col("t").fill_null(pl.lit(file_time(ctx), pl.Datetime("us"))),
                               name=pl.col("f").struct.field("1"), raw=pl.col("f").struct.field("2"))
    counter = pl.col("name").is_in(list(COUNTERS))
    count = pl.col("raw").cast(pl.UInt64, strict=False)  # an IB counter: unsigned, at most 64 bits
    value = count.cast(pl.Float64)
    value = pl.when(pl.col("name").is_in(["PortXmitData", "PortRcvData"])).then(value * 4).otherwise(value)
    stripped = text.str.strip_chars()
    why = (pl.when(counter & (pl.col("raw") == "")).then(pl.format("{} without a value", pl.col("name")))
           .when(counter & pl.col("raw").str.contains(r"^-\d+$")).then(
               pl.format("{} value {} is negative: port counters are unsigned", pl.col("name"), pl.col("raw")))
           .when(counter & pl.col("raw").str.contains(r"^\d+$") & count.is_null()).then(
               pl.format("{} value {} is beyond 2^64: port counters are at most 64-bit", pl.col("name"), pl.col("raw")))
           .when(counter & count.is_null()).then(
               pl.format("{} value '{}' is not an unsigned integer", pl.col("name"), pl.col("raw")))
           .when(counter & ~pl.col("strict")).then(
               pl.format("{} line garbled: expected '{}:.....value'", pl.col("name"), pl.col("name")))
           .when(counter & pl.col("port").is_null()).then(pl.lit("counter without a '# Port counters' header above it"))
           .when(counter & pl.lit(ctx.host_hint is None)).then(pl.lit(
               "perfquery output names no host: put it under network/<host>/ or name the host in the file name"))
           .when(counter & ~in_years(pl.col("time"))).then(pl.format(
               "time {} is outside the years {}-{} (the date line above the reading, else the file's name or "
               "modification time)", pl.col("time"), pl.lit(YEARS[0]), pl.lit(YEARS[1])))
           .when(counter).then(None)
           .when(pl.col("is_time")).then(pl.when(in_years(pl.col("t"))).then(None).otherwise(pl.format(
               "time {} is outside the years {}-{}", pl.col("t"), pl.lit(YEARS[0]), pl.lit(YEARS[1]))))
           .when((stripped == "") | stripped.str.starts_with("#")).then(None)  # blank, header, comment
           .when(pl.col("strict") & pl.col("name").is_in(_CUT)).then(
               pl.format("counter name '{}' cut off (a prefix of {})", pl.col("name"),
                         pl.col("name").replace_strict(_CUT, default="")))
           .when(pl.col("strict")).then(None)  # another counter perfquery prints (PortSelect, PortUnicastXmitPkts ...)
           .otherwise(pl.lit("not a perfquery line: expected 'Name:.....value', a '# Port counters' header or a "
                             "date line (cut off or garbled?)")))
    frame = frame.with_columns(why=why, value=value)
    bad = frame.filter(pl.col("why").is_not_null())
    good = frame.filter(pl.col("why").is_null() & counter)
    out = good.select("time", host=pl.lit(ctx.host_hint), metric=_metric(
        pl.col("name").replace_strict(COUNTERS), pl.lit(""), pl.col("port")), gpu=pl.lit(None, pl.Int32),
        value="value", line_no="line_no")
    return ParseResult(tables={"telemetry": out}, rejects=make_rejects(bad["line_no"], bad["text"], bad["why"]),
                       skipped=lines.height - good.height - bad.height, format="perfquery")


def stamp_line(text: pl.Expr, tz: str) -> pl.Expr:
    """The time a collector's stamp line gives (an ISO time, or `date`'s "Mon Mar  4 06:00:01 UTC 2024"), else
    null: perfquery's and kube-state-metrics' scrapes (ksm.py) carry no time of their own."""
    iso = pl.when(text.str.contains(r"^\s*\d{4}-\d\d-\d\d[T ]\d\d:\d\d")).then(
        parse_time_any(text.str.strip_chars(), tz))
    return pl.coalesce(iso, _date_line(text, tz))


def _date_line(text: pl.Expr, tz: str) -> pl.Expr:
    m = text.str.extract_groups(r"^\s*\w{3}\s+(\w{3})\s+(\d{1,2})\s+(\d\d:\d\d:\d\d)\s+(?:[A-Z]{2,5}\s+)?(\d{4})\s*$")
    months = {m: f"{i:02d}" for i, m in enumerate(["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep",
                                                  "Oct", "Nov", "Dec"], start=1)}
    iso = pl.format("{}-{}-{}T{}", m.struct.field("4"), m.struct.field("1").replace_strict(months, default=None),
                    m.struct.field("2").str.zfill(2), m.struct.field("3"))
    return parse_time_any(iso, tz)


def _ibqueryerrors(lines: pl.DataFrame, ctx: ParseContext) -> ParseResult:
    text = pl.col("text")
    stripped = text.str.strip_chars()
    header = text.str.starts_with("Errors for")
    desc = text.str.extract(ERRORS_FOR, 1)
    node = (desc.str.replace(r"^[^;]*;", "").str.extract(r"^([^\s:]+)", 1))
    # a garbled 'Errors for' line names no node: the readings below it have none (not the node above it)
    frame = lines.with_columns(node=pl.when(header).then(node.fill_null("")).forward_fill().replace("", None),
                               g=text.str.extract_groups(GUID_PORT))
    port, rest = pl.col("g").struct.field("1"), pl.col("g").struct.field("2")
    garbled = rest.str.replace_all(READING, "").str.strip_chars() != ""
    frame = frame.with_columns(c=pl.when(port.is_not_null() & (port != "ALL")).then(rest.str.extract_all(READING)))
    readings = frame.filter(pl.col("c").list.len() > 0).select("line_no", "node", port=port, c="c").explode("c")
    readings = readings.with_columns(name=pl.col("c").str.extract(r"\[(\w+) ==", 1),
                                     raw=pl.col("c").str.extract(r"== (\d+)", 1))
    readings = readings.filter(pl.col("name").is_in(list(COUNTERS))).with_columns(
        value=pl.col("raw").cast(pl.UInt64, strict=False).cast(pl.Float64))
    taken = file_time(ctx)
    time_ok = YEARS[0] <= taken.year <= YEARS[1]
    per_line = readings.group_by("line_no").agg(
        big=pl.col("raw").filter(pl.col("value").is_null()).first(), node=pl.col("node").first())
    why = (pl.when(port.is_null() & stripped.str.contains(r"^GUID\b")).then(pl.lit(
               "ibqueryerrors port line cut off or garbled: expected 'GUID 0x<guid> port <n>: [Counter == value] ...'"))
           .when(port.is_not_null() & garbled).then(pl.lit(
               "ibqueryerrors port line cut off or garbled: every reading must read '[Counter == value]'"))
           .when(header & desc.is_null()).then(pl.lit(
               "'Errors for' line cut off or garbled: no quoted node description (the readings below it are refused)"))
           .when(pl.col("big").is_not_null()).then(pl.format(
               "counter value {} is beyond 2^64: port counters are at most 64-bit", pl.col("big")))
           .when(pl.col("has").fill_null(False) & pl.col("node").is_null()).then(pl.lit(
               "readings without an 'Errors for \"<node description>\"' line above them"))
           .when(pl.col("has").fill_null(False) & pl.lit(not time_ok)).then(pl.lit(
               f"time {taken} (from the file's name or modification time) is outside the years "
               f"{YEARS[0]}-{YEARS[1]}"))
           .when(header | port.is_not_null() | (stripped == "") | stripped.str.starts_with("#")
                 | stripped.str.starts_with("Suppressing:")).then(None)
           .otherwise(pl.lit("not an ibqueryerrors line: expected 'Errors for ... \"<node>\"', "
                             "'GUID 0x<guid> port <n>: [Counter == value]' or a '##' summary (cut off or garbled?)")))
    judged = frame.join(per_line.select("line_no", "big", has=pl.lit(True)), on="line_no", how="left") \
        .with_columns(why=why)
    bad = judged.filter(pl.col("why").is_not_null())
    good = readings.filter(~pl.col("line_no").is_in(bad["line_no"].implode()))
    out = good.select(time=pl.lit(taken, pl.Datetime("us")), host="node", metric=_metric(
        pl.col("name").replace_strict(COUNTERS), pl.lit(""), pl.col("port")),
        gpu=pl.lit(None, pl.Int32), value="value", line_no="line_no")
    return ParseResult(tables={"telemetry": out}, rejects=make_rejects(bad["line_no"], bad["text"], bad["why"]),
                       skipped=lines.height - out["line_no"].n_unique() - bad.height, format="ibqueryerrors")
