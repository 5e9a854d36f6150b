"""Kernel logs -> node_events: dmesg (-T, iso, --decode, raw), /dev/kmsg, pstore,
journalctl short-iso, RFC 3164/5424 syslog, NVIDIA Fabric Manager, and the
loghub HPC formats (Thunderbird, BGL, LANL HPC).

The format is detected per line, so concatenated or mixed files work. Each
format's regex runs only on the lines no earlier format claimed, so a file in
one format pays for one regex pass (plus the cheap skip/prefix checks).
"""
from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import replace
from datetime import datetime, timezone
from zoneinfo import ZoneInfo

import polars as pl

from analysis.ingest.contract import ParseContext, ParseResult
from analysis.ingest.lines import make_rejects
from analysis.ingest.parsers import batched
from analysis.ingest.parsers.kernel_events import classify, severity_from_pri, severity_from_word
from analysis.ingest.parts import each_piece
from analysis.ingest.timeutil import aware_to_naive_utc, in_years, local_to_utc, month_number, outside_years

ISO = r"(?P<date>\d{4}-\d\d-\d\d)T(?P<hms>\d\d:\d\d:\d\d)(?:[.,](?P<frac>\d+))?(?P<off>Z|[+-]\d\d:?\d\d)?"
# (name, header regex, continuation mode). Header regexes stop before the
# message: capture groups over the whole line are what makes regexes slow.
# Continuation mode: 0 none (syslog carries one line per message), 1 indented
# lines only (dmesg and journalctl indent the later lines of a multi-line
# message; kmsg dictionary lines start with a space), 2 any header-less line
# (Fabric Manager payloads).
FORMATS = [
    ("dmesg-T", r"^\[\w{3} +(?P<mon>\w{3}) +(?P<day>\d{1,2}) (?P<hms>\d\d:\d\d:\d\d) (?P<year>\d{4})\] ?", 1),
    # comma decimals are what tells dmesg --time-format iso from journal/rsyslog stamps
    ("dmesg-iso", r"^(?P<date>\d{4}-\d\d-\d\d)T(?P<hms>\d\d:\d\d:\d\d),(?P<frac>\d+)(?P<off>Z|[+-]\d\d:?\d\d)? ?", 1),
    ("journal-short-iso", rf"^{ISO} (?P<host>\S+) ", 1),
    ("syslog-3164", r"^(?P<mon>[A-Za-z]{3}) +(?P<day>\d{1,2}) (?P<hms>\d\d:\d\d:\d\d)(?:\.(?P<frac>\d+))? (?P<host>\S+) ", 0),
    ("dmesg-raw", r"^\[ *(?P<sec>\d+)\.(?P<frac>\d+)\] ?", 1),
    ("kmsg", r"^(?P<pri>\d{1,3}),\d+,(?P<usec>\d+),[^;]*;", 1),
    ("syslog-5424", rf"^1 (?:{ISO}|-) (?P<host>\S+) (?P<app>\S+) \S+ \S+ (?:-|(?:\[(?:[^\]\"]|\"(?:[^\"\\]|\\.)*\")*\])+) ?\ufeff?", 0),
    ("fabricmanager", r"^\[(?P<mon>[A-Za-z]{3}) (?P<day>\d{1,2}) (?P<year>\d{4}) (?P<hms>\d\d:\d\d:\d\d)\] \[(?P<level>\w+)\] (?:\[tid \d+\] )?", 2),
    ("thunderbird", r"^(?P<label>\S+) (?P<epoch>\d{9,11}) \d{4}\.\d\d\.\d\d (?P<host>\S+) [A-Za-z]{3} +\d{1,2} \d\d:\d\d:\d\d \S+ ?", 0),
    ("bgl", r"^(?P<label>\S+) (?P<epoch>\d{9,11}) \d{4}\.\d\d\.\d\d (?P<host>\S+) \d{4}-\d\d-\d\d-\d\d\.\d\d\.\d\d\.(?P<frac>\d+) \S+ \S+ \S+ (?P<level>[A-Z]+) ?", 0),
    ("lanl-hpc", r"^\d+ (?P<host>\S+) (?P<comp>\S+) (?P<state>\S+) (?P<epoch>\d{9,11}) -?\d+ ?", 0),
]
# Fixed-width stamps as util-linux dmesg writes them (ctime with %e; iso with
# 6 decimals): read by slicing, which is ~5x cheaper than capture groups.
FAST = {
    "dmesg-T": (r"^\[[A-Z][a-z]{2} [A-Z][a-z]{2} [ \d]\d \d\d:\d\d:\d\d \d{4}\]", 5, 20, "%b %e %H:%M:%S %Y", 26),
    "dmesg-iso": (r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d,\d{6}[+-]\d\d:\d\d", 0, 32, "%Y-%m-%dT%H:%M:%S,%6f%:z", 32),
}
ML = {name: mode for name, _, mode in FORMATS}
SKIP = r"^\s*$|^dmesg-[\w-]+:$|^[A-Z][a-z]+#\d+ Part\d+$|^-- .* --$"  # blank, pstore record names, journal banners
PREFIX = r"^(?:<\d{1,3}>)?(?:[a-z]+\d? *:([a-z]+) *: )?"  # <PRI> and/or dmesg --decode "kern  :warn  : "
HAS_PREFIX = r"^<\d{1,3}>|^[a-z]+\d? *:[a-z]+ *: "
NO_HOST = ["-", "NULL", "UNKNOWN_LOCATION", "(none)", "localhost", "localhost.localdomain"]
OUT = ["event_time", "host", "source", "kind", "code", "severity", "message", "device", "reporter", "line_no"]
NULL_S = pl.lit(None, pl.Utf8)


def _frac_us(col: str = "frac") -> pl.Expr:
    return pl.col(col).str.slice(0, 6).str.pad_end(6, "0").cast(pl.Int64, strict=False).fill_null(0)


def _stamp(parts: list, fmt: str, frac: str | None = "frac") -> pl.Expr:
    naive = pl.concat_str(parts, separator=" ").str.to_datetime(fmt, strict=False, time_unit="us")
    return naive + pl.duration(microseconds=_frac_us(frac)) if frac else naive


def _offset_min() -> pl.Expr:
    g = pl.col("off").str.extract_groups(r"^([+-])(\d\d):?(\d\d)$")
    mins = g.struct.field("2").cast(pl.Int32) * 60 + g.struct.field("3").cast(pl.Int32)
    return pl.when(pl.col("off") == "Z").then(0).otherwise(
        pl.when(g.struct.field("1") == "-").then(-mins).otherwise(mins))


def _syslog_years(d: pl.DataFrame, ctxs: list[ParseContext]) -> pl.Series:
    """RFC 3164 has no year. A drop of more than six months between lines
    (Dec -> Jan) starts a new year. options.syslog_year is the year of the
    first line; otherwise the last line is dated by the file's mtime. A log
    read in pieces (stream_parts: a batch of one file) goes on from the year
    and month the piece before ended in (so the first piece's last line is
    dated by the mtime)."""
    m = d.select("fid", month_number(pl.col("mon")).alias("m")).with_columns(
        rolls=(pl.col("m").diff().fill_null(0) < -6).cast(pl.Int32).cum_sum().over("fid"))
    years = _years(m, ctxs)
    state = ctxs[0].state if len(ctxs) == 1 else {}
    known = years.filter(m["m"].is_not_null())
    if "syslog" in state and known.len():
        state["syslog"] = (known[-1], m["m"].drop_nulls()[-1])
    return years


def _years(m: pl.DataFrame, ctxs: list[ParseContext]) -> pl.Series:
    carried = ctxs[0].state.get("syslog") if len(ctxs) == 1 else None
    if carried:
        year, last_month = carried
        first = m["m"].drop_nulls()
        return m["rolls"] + year + (1 if first.len() and first[0] - last_month < -6 else 0)
    if ctxs[0].options.syslog_year:
        return m["rolls"] + ctxs[0].options.syslog_year
    ends = m.group_by("fid").agg(last=pl.col("m").drop_nulls().last(), end_rolls=pl.col("rolls").last())
    refs = {fid: _mtime(ctxs[fid]) for fid in ends["fid"].to_list()}
    ends = ends.with_columns(ref_year=batched.per_file([refs.get(i, _NOW).year for i in range(len(ctxs))], pl.Int32),
                             ref_month=batched.per_file([refs.get(i, _NOW).month for i in range(len(ctxs))], pl.Int32))
    last_year = pl.col("ref_year") - (pl.col("last") > pl.col("ref_month")).fill_null(False).cast(pl.Int32)
    ends = ends.select("fid", base=last_year - pl.col("end_rolls"))
    return m.join(ends, on="fid", how="left", maintain_order="left").select(pl.col("rolls") + pl.col("base"))["rolls"]


_NOW = datetime.now(timezone.utc)


def _mtime(ctx: ParseContext) -> datetime:
    try:
        return ctx.mtime
    except OSError:
        return datetime.now(timezone.utc)


def _build(name: str, d: pl.DataFrame, ctxs: list[ParseContext]) -> pl.DataFrame:
    """Format-specific fields -> line_no, fmt, naive (stamp), off (minutes east
    of UTC; NULL = options.tz), up_us (since boot), host, sev, message, label, code0."""
    c, cols = pl.col, set(d.columns)
    get = lambda k: c(k) if k in cols else NULL_S  # noqa: E731
    off, up, msg, sev, label, code0 = pl.lit(None, pl.Int32), pl.lit(None, pl.Int64), c("msg"), NULL_S, NULL_S, NULL_S
    naive = pl.lit(None, pl.Datetime("us"))
    if "date" in cols and "naive" not in cols:
        naive, off = _stamp([c("date"), c("hms")], "%Y-%m-%d %H:%M:%S"), _offset_min()
    if "naive" in cols:  # fast path; tz-aware when the stamp had an offset
        aware = d.schema["naive"].time_zone is not None
        naive = aware_to_naive_utc(c("naive")) if aware else c("naive")
        off = pl.lit(0 if aware else None, pl.Int32)
    elif name in ("dmesg-T", "fabricmanager"):
        naive = _stamp([c("year"), c("mon"), c("day"), c("hms")], "%Y %b %d %H:%M:%S", None)
    elif name == "syslog-3164":
        d = d.with_columns(year=_syslog_years(d, ctxs).cast(pl.Utf8))
        naive = _stamp([c("year"), c("mon"), c("day"), c("hms")], "%Y %b %d %H:%M:%S")
    elif name == "dmesg-raw":
        up = c("sec").cast(pl.Int64, strict=False) * 1_000_000 + _frac_us()
    elif name == "kmsg":
        up, sev = c("usec").cast(pl.Int64, strict=False), severity_from_pri(c("pri").cast(pl.Int64))
    elif name == "syslog-5424":
        msg = pl.when(c("app").is_in(["kernel", "-"])).then(msg).otherwise(pl.concat_str([c("app"), msg], separator=": "))
    elif "epoch" in cols:
        frac = _frac_us() if "frac" in cols else 0
        naive, off = pl.from_epoch(c("epoch").cast(pl.Int64) * 1_000_000 + frac, "us"), pl.lit(0, pl.Int32)
        label = pl.when(c("label") != "-").then(c("label")) if "label" in cols else NULL_S
        if name == "lanl-hpc":  # \042 is how the LANL dump writes a double quote
            msg, code0 = msg.str.replace_all(r"\042", '"', literal=True), pl.concat_str([c("comp"), c("state")], separator=":")
    if "level" in cols:
        sev = severity_from_word(c("level"))
    if name in ("journal-short-iso", "syslog-3164", "thunderbird"):
        msg = msg.str.replace(r"^kernel: (?:\[ *\d+\.\d+\] ?)?", "")
    return d.select(c("line_no"), c("fid"), pl.lit(name).alias("fmt"), naive.alias("naive"), off.cast(pl.Int32).alias("off"),
                    up.alias("up_us"), get("host").alias("host"), sev.alias("sev"), msg.alias("message"),
                    label.alias("label"), code0.alias("code0"), get("pri").alias("pri"), get("lvl").alias("lvl"))


def _headers(body: pl.DataFrame, ctxs: list[ParseContext]) -> pl.DataFrame | None:
    """Claim lines format by format; None when no line has a known header."""
    parts, rest, b = [], body, pl.col("body")
    for name, rx, _ in FORMATS:
        for fast in (True, False):
            if rest.height == 0 or (fast and name not in FAST):
                continue
            hit = b.str.contains(FAST[name][0] if fast else rx)
            mask = rest.select(hit).to_series()
            if not mask.any():
                continue
            got, rest = (rest, rest.clear()) if mask.all() else (rest.filter(mask), rest.filter(~mask))
            if fast:
                _, start, length, fmt, end = FAST[name]
                stamps = got.select(b.str.slice(start, length)).to_series()
                parse_ts = lambda x: x.str.to_datetime(fmt, strict=False, time_unit="us")  # noqa: E731
                if name == "dmesg-T":  # whole seconds repeat a lot: parse each distinct stamp once
                    u = stamps.unique()
                    naive = stamps.replace_strict(u, parse_ts(u), return_dtype=pl.Datetime("us"))
                else:
                    naive = parse_ts(stamps)
                got = got.with_columns(naive=naive, msg=b.str.slice(end).str.strip_prefix(" "))
            else:  # (the header's length cuts the message off: a second pass of the regex costs as much)
                got = got.with_columns(g=b.str.extract_groups(f"(?P<_hdr>{rx})")).unnest("g").with_columns(
                    msg=b.str.slice(pl.col("_hdr").str.len_chars())).drop("_hdr")
            parts.append(_build(name, got, ctxs))
    return pl.concat(parts, how="vertical_relaxed") if parts else None


def _boot_time(ctx: ParseContext) -> tuple[datetime | None, str | None]:
    """Boot time (naive UTC) from options or the ``<file>.boottime`` sidecar."""
    host = ctx.host_hint
    def to_utc(t: datetime) -> datetime:
        t = t if t.tzinfo else t.replace(tzinfo=ZoneInfo(ctx.options.tz))
        return t.astimezone(timezone.utc).replace(tzinfo=None)
    if host in ctx.options.boot_times:
        t = ctx.options.boot_times[host]
        return (t.astimezone(timezone.utc).replace(tzinfo=None) if t.tzinfo else t), None
    sidecar = ctx.path.with_name(ctx.path.name + ".boottime")
    if sidecar.is_file():
        text = sidecar.read_text(errors="replace").strip()
        try:
            return to_utc(datetime.fromisoformat(text.replace(",", "."))), None
        except ValueError:
            return None, f"raw dmesg timestamp and unreadable boot time {text[:40]!r} in {sidecar.name}"
    return None, (f"raw dmesg timestamp (seconds since boot) and no boot time for host {host or '(unknown)'}: "
                  f"pass --boot-time or write {ctx.path.name}.boottime")


def stream_parts(chunks: Iterable[pl.DataFrame], ctx: ParseContext) -> Iterator[ParseResult]:
    """A large log piece by piece (analysis/ingest/parts.py), cut before a line with a header of its own, so a
    multi-line message stays whole; RFC 3164 years go on from the piece before (_syslog_years)."""
    return each_piece(parse, chunks, replace(ctx, state={"syslog": None}), _has_header)


def _has_header(lines: pl.DataFrame) -> pl.Series:
    body = lines["text"].str.replace(PREFIX, "")
    return pl.DataFrame({"b": body}).select(pl.any_horizontal(pl.col("b").str.contains(rx) for _, rx, _ in FORMATS))[:, 0]


def parse(lines: pl.DataFrame, ctx: ParseContext) -> ParseResult:
    return batched.single(parse_batch(batched.numbered(lines), [ctx]))


def parse_batch(lines: pl.DataFrame, ctxs: list[ParseContext]) -> batched.BatchResult:
    """Many kernel logs at once (analysis.ingest.parsers.batched)."""
    tz = ctxs[0].options.tz
    text = pl.col("text")
    skip = lines.select(text.str.contains(SKIP))["text"]
    n_skipped = int(skip.sum())
    skipped = batched.counts(lines["fid"].filter(skip))
    live = lines.filter(~skip) if n_skipped else lines
    pre_mask = live.select(text.str.contains(HAS_PREFIX))["text"]
    prefixed = live.filter(pre_mask).with_columns(
        pri=text.str.extract(r"^<(\d{1,3})>", 1), lvl=text.str.extract(PREFIX, 1), body=text.str.replace(PREFIX, ""))
    body = pl.concat([live.filter(~pre_mask).with_columns(body=text),
                      prefixed.select(*live.columns, "body")])
    if prefixed.height:
        body = body.sort("line_no")  # RFC 3164 year rollover needs file order
    recs = _headers(body, ctxs)
    # a file of which no line has a header is no kernel log: none of its lines is read
    headed = set(recs["fid"].unique().to_list()) if recs is not None else set()
    unrecognised = {fid: f"no kernel log header in {n} non-blank lines"
                    for fid, n in batched.counts(live["fid"]).items() if fid not in headed}
    if recs is None:
        return batched.BatchResult({"node_events": pl.DataFrame(schema=_schema())}, skipped=skipped,
                                 unrecognised=unrecognised)
    recs = recs.drop("pri", "lvl")
    if prefixed.height:
        pri = prefixed.select("line_no", pl.col("pri").cast(pl.Int64, strict=False).alias("ppri"), pl.col("lvl").alias("plvl"))
        recs = recs.join(pri, on="line_no", how="left")
    else:
        recs = recs.with_columns(ppri=pl.lit(None, pl.Int64), plvl=NULL_S)
    host = pl.col("host").str.replace(r"^([A-Za-z][\w-]*)\.[A-Za-z][\w.-]*$", "$1")
    recs = recs.with_columns(
        host=pl.when(host.is_in(NO_HOST) | host.is_null())
        .then(batched.per_file([c.host_hint for c in ctxs], pl.Utf8)).otherwise(host),
        sev=pl.coalesce(severity_from_word(pl.col("plvl")), severity_from_pri(pl.col("ppri")), pl.col("sev")))
    raw_fids = set(recs.filter(pl.col("up_us").is_not_null())["fid"].unique().to_list())
    boots = [_boot_time(c) if fid in raw_fids else (None, None) for fid, c in enumerate(ctxs)]
    naive = pl.col("naive")
    wall = pl.when(pl.col("off").is_not_null()).then(naive - pl.duration(minutes=pl.col("off"))) \
        .otherwise(local_to_utc(naive, tz))
    since_boot = batched.per_file([b for b, _ in boots], pl.Datetime("us")) + pl.duration(microseconds=pl.col("up_us"))
    recs = recs.with_columns(event_time=pl.when(pl.col("up_us").is_not_null()).then(since_boot).otherwise(wall))
    t = pl.col("event_time")
    recs = recs.with_columns(why=pl.when(t.is_not_null() & in_years(t)).then(NULL_S)
                             .when(t.is_not_null()).then(outside_years(t))
                             .when(pl.col("up_us").is_not_null()).then(batched.per_file([e for _, e in boots], pl.Utf8))
                             .otherwise(pl.lit(f"invalid timestamp (or not a time in {tz})")))
    if recs.height == live.height:  # every line that is not skipped has a header: nothing to fold
        merged, rejects = {}, make_rejects([], [], [])
    else:
        recs, merged, rejects = _continuations(lines, skip, recs)
    good = recs.filter(pl.col("why").is_null()).select("line_no", "event_time", "host", "sev", "message", "label", "code0")
    events = classify(good).with_columns(code=pl.coalesce("code", "code0", "label"))
    events = events.select(
        pl.col("event_time").cast(pl.Datetime("us")), "host", pl.lit("kernel").alias("source"), "kind", "code",
        pl.col("sev").alias("severity"), "message", "device", pl.col("host").alias("reporter"), "line_no")
    if not events["line_no"].is_sorted():  # mixed formats come back grouped by format
        events = events.sort("line_no")
    bad = recs.filter(pl.col("why").is_not_null()).join(lines.rename({"text": "raw"}), on="line_no", how="left")
    rejects = pl.concat([make_rejects(bad["line_no"], bad["raw"], bad["why"].to_list()), rejects])
    return batched.BatchResult({"node_events": events}, rejects=rejects.sort("line_no"), skipped=skipped, merged=merged,
                             formats=batched.formats(recs["fid"], recs["fmt"]), unrecognised=unrecognised)


def _continuations(lines: pl.DataFrame, skip: pl.Series, recs: pl.DataFrame):
    """Fold header-less lines into the record above them when its format has
    multi-line records; reject the rest. Returns (records, fid -> lines merged, rejects)."""
    state = lines.select("fid", "line_no", "text").with_columns(skip=skip).join(
        recs.select("line_no", "fmt", "why"), on="line_no", how="left")
    # Each header-less line looks at the nearest line above that is not
    # header-less: a record (its line_no, mode, reject reason) or a skip (-1).
    is_n = pl.col("fmt").is_null() & ~pl.col("skip")
    own = lambda e: pl.when(is_n).then(None).otherwise(e).forward_fill().over("fid")  # noqa: E731
    state = state.with_columns(
        run=((~is_n) | (pl.col("fid") != pl.col("fid").shift(1))).cum_sum(), is_n=is_n,
        anchor=own(pl.when(pl.col("skip")).then(-1).otherwise(pl.col("line_no"))),
        mode=own(pl.col("fmt").replace_strict(ML, default=0, return_dtype=pl.Int8).fill_null(0)),
        awhy=own(pl.col("why").fill_null("")))
    n = state.filter("is_n").with_columns(
        broken=(~pl.col("text").str.contains(r"^\s")).cum_sum().over("run") > 0)
    ok = (pl.col("anchor") > 0) & ((pl.col("mode") == 2) | ((pl.col("mode") == 1) & ~pl.col("broken")))
    n = n.with_columns(ok=ok.fill_null(False))
    cont = n.filter(pl.col("ok") & (pl.col("awhy") == ""))
    dead = n.filter(pl.col("ok") & (pl.col("awhy") != ""))
    orphan = n.filter(~pl.col("ok"))
    rejects = pl.concat([
        make_rejects(orphan["line_no"], orphan["text"], "no recognised timestamp header"),
        make_rejects(dead["line_no"], dead["text"],
                     dead.select(pl.format("continuation of rejected line {}", batched.local_no(pl.col("anchor"))))
                     .to_series())])
    if cont.height:
        extra = cont.group_by("anchor", maintain_order=True).agg(pl.col("text").str.strip_chars().str.join("\n").alias("more"))
        recs = recs.join(extra, left_on="line_no", right_on="anchor", how="left").with_columns(
            message=pl.when(pl.col("more").is_null()).then(pl.col("message"))
            .otherwise(pl.concat_str(["message", "more"], separator="\n"))).drop("more")
    return recs, batched.counts(cont["fid"]), rejects


def _schema() -> dict:
    s = {k: pl.Utf8 for k in OUT}
    s.update(event_time=pl.Datetime("us"), line_no=pl.Int64)
    return {k: s[k] for k in OUT}
