"""``sacctmgr show event -P format=NodeName,TimeStart,TimeEnd,State,Reason,User``
-> ``node_state_periods`` and ``node_events`` (one row per host in each).

Shape (Slurm src/sacctmgr/event_functions.c): '|'-separated, header first
(column order taken from it, any subset incl. Cluster, Duration, Event); a dump
without header is read in the default order NodeName|TimeStart|TimeEnd|State|
Reason|User. ``-p`` (not ``-P``) ends every line with an extra '|': detected on
the header and stripped. TimeStart/TimeEnd are local 'YYYY-MM-DDTHH:MM:SS'
(ctx.options.tz); TimeEnd 'Unknown' (event still open) -> NULL. User is
'name(uid)' or empty; the name is kept. Cluster events have an empty NodeName
and State: stored with host NULL. Reason is free text written by an admin or
NHC and may contain '|': a line with too many fields is repaired by giving the
extra fields back to Reason (the columns after it are taken from the right).
"""
from __future__ import annotations

from collections.abc import Iterable, Iterator

import polars as pl

from analysis.ingest.contract import ParseContext, ParseResult, UnrecognisedFormat
from analysis.ingest.hosts import HostlistError, expand_hostlist
from analysis.ingest.lines import make_rejects
from analysis.ingest.parsers.csvlines import parse_time_any
from analysis.ingest.parts import each_piece

DEFAULT = ["nodename", "timestart", "timeend", "state", "reason", "user"]
KNOWN = {"cluster", "clusternodes", "cpus", "duration", "event", "eventraw", "nodename", "reason",
         "state", "stateraw", "timeend", "timestart", "tres", "user"}
PERIODS = ["host", "time_start", "time_end", "state", "reason", "user_name", "line_no"]
EVENTS = ["event_time", "host", "source", "kind", "code", "severity", "message", "device", "reporter", "line_no"]


def _detect(body: pl.DataFrame) -> tuple[list[str], bool, bool]:
    """-> (columns, has_header, trailing_pipe)."""
    first = body["text"][0].strip()
    names = [n.strip().lower() for n in first.split("|")]
    trailing = len(names) > 1 and names[-1] == ""
    if trailing:
        names = names[:-1]
    if {"timestart", "state"} <= set(names) and set(names) <= KNOWN:
        return names, True, trailing
    # headerless: the default order; the second field must look like a time
    if len(names) >= 6 and first.split("|")[1][:4].isdigit():
        return DEFAULT, False, first.endswith("|") and first.count("|") == 6
    raise UnrecognisedFormat(
        "not sacctmgr event output: expected a 'NodeName|TimeStart|TimeEnd|State|Reason|User' header "
        "(sacctmgr show event -P format=...) or '|'-separated rows in that order")


def _expand(expr: str | None, max_hosts: int) -> list[str | None]:
    try:
        hosts = list(expand_hostlist(expr, max_hosts))
    except HostlistError:
        return []  # rejected below
    return hosts or [None]  # no node: a cluster event


def parse(lines: pl.DataFrame, ctx: ParseContext) -> ParseResult:
    return _parse(lines, ctx)[0]


def stream_parts(chunks: Iterable[pl.DataFrame], ctx: ParseContext) -> Iterator[ParseResult]:
    """A large dump piece by piece (analysis/ingest/parts.py; one line is one event): a piece after the first is
    read with the columns of the file's first line."""
    layout = None

    def piece(lines: pl.DataFrame, ctx: ParseContext) -> ParseResult:
        nonlocal layout
        result, layout = _parse(lines, ctx, layout)
        return result

    return each_piece(piece, chunks, ctx)


def _parse(lines: pl.DataFrame, ctx: ParseContext, layout: tuple | None = None) -> tuple[ParseResult, tuple | None]:
    """-> (the result, the layout: columns, header?, trailing '|', the header's text), read from the first
    non-blank line unless ``layout`` gives it."""
    body = lines.filter(pl.col("text").str.strip_chars() != "")
    skipped = lines.height - body.height
    if body.height == 0:
        return ParseResult(tables={"node_state_periods": pl.DataFrame(), "node_events": pl.DataFrame()},
                           skipped=skipped, format="sacctmgr-event"), layout
    layout = layout or (*_detect(body), body["text"][0])
    cols, has_header, trailing, head = layout
    if has_header:
        skipped += body.filter(pl.col("text") == head).height  # repeated headers too
        body = body.filter(pl.col("text") != head)
    text = pl.col("text").str.strip_suffix("|") if trailing else pl.col("text")
    rows = body.with_columns(f=text.str.split("|"))
    width, n = len(cols), pl.col("f").list.len()
    ri = cols.index("reason") if "reason" in cols else width - 1
    extra = (n - width).clip(lower_bound=0)

    def field(name: str) -> pl.Expr:
        if name not in cols:
            return pl.lit(None, pl.Utf8)
        j = cols.index(name)
        if j < ri:
            got = pl.col("f").list.get(j, null_on_oob=True)
        elif j == ri:  # the free-text column absorbs the surplus separators
            got = pl.col("f").list.slice(ri, extra + 1).list.join("|")
        else:
            got = pl.col("f").list.get(j + extra, null_on_oob=True)
        return got.str.strip_chars().replace("", None)

    rows = rows.with_columns(
        node=field("nodename"), start_raw=field("timestart"), end_raw=field("timeend"),
        state=field("state").str.to_uppercase(), reason=field("reason"),
        user_name=field("user").str.replace(r"\(\d+\)$", ""))
    tz = ctx.options.tz
    unknown_end = pl.col("end_raw").is_null() | pl.col("end_raw").str.to_lowercase().is_in(["unknown", "none"])
    rows = rows.with_columns(
        time_start=parse_time_any(pl.col("start_raw"), tz),
        time_end=pl.when(unknown_end).then(None).otherwise(parse_time_any(pl.col("end_raw"), tz)),
        hosts=pl.col("node").map_elements(lambda e: _expand(e, ctx.options.max_hostlist_hosts), return_dtype=pl.List(pl.Utf8), skip_nulls=False))
    reason = (
        pl.when(n < width).then(pl.format("{} fields, expected {}", n, pl.lit(width)))
        # pl.format of a NULL is NULL, which would make the row look fine: fill first
        .when(pl.col("time_start").is_null()).then(pl.format("unparseable TimeStart '{}'", pl.col("start_raw").fill_null("")))
        .when(~unknown_end & pl.col("time_end").is_null()).then(pl.format("unparseable TimeEnd '{}'", pl.col("end_raw").fill_null("")))
        .when(pl.col("hosts").list.len().fill_null(0) == 0).then(pl.format("bad hostlist '{}'", pl.col("node").fill_null(""))))
    rows = rows.with_columns(why=reason)
    bad = rows.filter(pl.col("why").is_not_null())
    good = rows.filter(pl.col("why").is_null()).explode("hosts").rename({"hosts": "host"})
    periods = good.select(PERIODS)
    events = good.select(
        pl.col("time_start").alias("event_time"), "host", pl.lit("slurm").alias("source"),
        pl.lit("node_state").alias("kind"), pl.col("state").alias("code"), pl.lit(None, pl.Utf8).alias("severity"),
        pl.col("reason").alias("message"), pl.lit(None, pl.Utf8).alias("device"),
        pl.lit("slurmctld").alias("reporter"), "line_no")
    return ParseResult(
        tables={"node_state_periods": periods, "node_events": events},
        rejects=make_rejects(bad["line_no"], bad["text"], bad["why"].to_list()),
        skipped=skipped, format="sacctmgr-event" + ("" if has_header else "-noheader")), layout
