"""Switch syslog (Cisco NX-OS/IOS, NVIDIA Onyx/NVOS/Cumulus, Arista EOS) -> node_events.

Switch logs arrive through relays that each prepend their own header, so one
file mixes many header shapes. Each shape is one regex; all are run over the
column and the first that matches a line wins (no Python loop over lines).
``host`` stays NULL: the engine maps (reporter, device) to compute hosts with
the topology table, normalising the topology's port column with
:func:`normalize_port` so both sides agree.
"""
from __future__ import annotations

from collections.abc import Iterable, Iterator

import polars as pl

from analysis.ingest.contract import ParseContext, ParseResult
from analysis.ingest.lines import make_rejects
from analysis.ingest.parsers import batched
from analysis.ingest.parts import each_piece
from analysis.ingest.timeutil import TZ_ABBREV_MINUTES, in_years, infer_year, month_number, outside_years, shift_by_abbrev

SEVERITIES = ["emerg", "alert", "crit", "err", "warning", "notice", "info", "debug"]
# Onyx writes "[mgmtd.NOTICE]:" after the tag; used when the line has no <PRI>.
_WORD_SEVERITY = {s: s for s in SEVERITIES} | {"emergency": "emerg", "critical": "crit", "error": "err",
                                               "warn": "warning", "informational": "info"}
_WORD_LEVEL = {s: i for i, s in enumerate(SEVERITIES)}

# --- header building blocks -------------------------------------------------
# Host: name or IPv4. It must contain a letter or a dot, so a bare number (a
# sequence number, a year) is never taken for the host.
_HOST = r"[\w-]*[A-Za-z.][\w.-]*"
_TIME = r"(?P<H>\d{1,2}):(?P<M>\d\d):(?P<S>\d\d)(?P<frac>\.\d+)?"
# BSD stamp "May  2 15:21:27(.206)"; IOS prefixes '*' (clock not synced) or '.'.
_BSD = r"[*.]?(?P<mon>[A-Za-z]{3}) +(?P<day>\d{1,2}) +" + _TIME
# A relay's stamp (BSD or RFC 3339), superseded by the device's own stamp behind it.
_RELAY = r"(?:[A-Za-z]{3} +\d{1,2} +\d{1,2}:\d\d:\d\d(?:\.\d+)?|\d{4}-\d\d-\d\dT\S+)"
_ISO = (r"(?P<year>\d{4})-(?P<mon>\d\d)-(?P<day>\d\d)[T ]" + _TIME
        + r"(?P<off>Z|[+-]\d\d:?\d\d)?")
# Tag: "switchd[19517]: ", "Ebra: ", "AEST: ". SONiC writes its level word and
# "container#program" ("NOTICE swss#orchagent: "); the program is what follows '#'.
# The level word is only taken when a tag follows, so a message starting with
# "ERROR ..." keeps its first word.
_LEVEL_WORD = r"(?:(?P<levelword>EMERG|ALERT|CRIT|ERR|WARNING|NOTICE|INFO|DEBUG) +)?"
_TAG = r"(?:" + _LEVEL_WORD + r"(?:[\w.-]*#)?(?P<prog>[\w./-]+)(?:\[\d+\])? ?: +)?"
# A relay that writes "<its stamp> <sender> <raw message>" in front of a Linux
# NOS line ("May  2 15:21:30 10.0.0.1 <189>May  2 15:21:27 leaf01 switchd[1]: ...").
# The inner header names the switch and its level; the relay's fields are dropped.
_FWD = _RELAY + r" +" + _HOST + r" +(?:<(?P<ipri>\d{1,3})>)?"

# Header patterns (the message is the rest of the line; capturing it with
# ".*" would double the regex cost). Order matters: the first match wins.
PATTERNS: dict[str, str] = {
    # <189>1 2023-05-02T12:57:15.123Z leaf01 switchd 1234 - [sd@1 a="b"] msg
    "rfc5424": r"1 " + _ISO + r" +(?P<host>\S+) +(?P<prog>\S+) +\S+ +\S+ +(?:-|(?:\[(?:[^\]\\]|\\.)*\])+) ?",
    # NX-OS/IOS device stamp ending in ':' with optional relay stamp, sequence
    # numbers, host and zone in front; e.g. ": 2023 May  2 12:55:19 UTC: ",
    # "May 3 13:20:50 10.100.0.34 6031594: May 3 13:20:48.739 AEST: ",
    # "109692: 10.100.0.36: May 9 14:40:12.903: ", "May  3 13:55:35 h 2023 May  3 ...".
    "nxos": (r"(?:" + _RELAY + r" +)?(?:\d+: +)?(?:(?P<host>" + _HOST + r")(?:(?: +\d+)? *:)? +|: +)?"
             r"(?:(?P<year>\d{4}) +)?" + _BSD + r"(?: +(?P<tz>[A-Z]{2,5}))? ?:(?: +|$)"),
    # Relayed Linux NOS lines (see _FWD), tried before the relay's own header matches alone.
    "relay-iso": _FWD + _ISO + r" +(?P<host>" + _HOST + r") +" + _TAG,
    "relay-3164": _FWD + _BSD + r" +(?P<host>" + _HOST + r") +" + _TAG,
    # rsyslog/Cumulus/NVUE: 2017-05-22T11:21:07.153894-04:00 leaf01 switchd[19517]: msg
    "iso": _ISO + r" +(?P<host>" + _HOST + r") +" + _TAG,
    # NX-OS local logfile "2023 May  1 22:58:09 switchname msg"; SONiC 202311+ syslog
    # "2025 Sep  9 01:00:02.772803 host NOTICE swss#portmgrd: msg" has the same stamp.
    "nxos-local": r"(?P<year>\d{4}) +" + _BSD + r" +(?P<host>" + _HOST + r") +" + _TAG,
    # RFC 3164: May  2 15:21:27 leaf01 prog[pid]: msg (Onyx, EOS, SONiC, Linux-based NOS)
    "rfc3164": _BSD + r" +(?P<host>" + _HOST + r") +" + _TAG,
}
FIELDS = ["year", "mon", "day", "H", "M", "S", "frac", "off", "tz", "host", "prog", "levelword", "ipri"]

# --- message fields ---------------------------------------------------------
# Cisco mnemonic %FAC[-SUB]-N-MNEMONIC: the digit before the mnemonic is the severity.
_CODE = r"%(?P<code>[A-Z][A-Z0-9_]*(?:-[A-Z0-9_]+)*?-(?P<lvl>[0-7])-[A-Z][A-Z0-9_]*) ?:"
_ONYX_LEVEL = r"^\[[\w.-]+\.([A-Za-z]+)\]"
# Port names as switches print them; long IOS names before their prefixes.
_PORT = (r"(?i)\b((?:[a-z]*ethernet|[a-z]*gige|eth|gi|te|tw|twe|fa|fo|hu|ib|swp)"
         r" ?\d+(?:/\d+)*(?:s\d+|:\d+)?)\b")
_BARE_PORT = r"(?i)\b(?:interface|port) +(\d+(?:/\d+)+)\b"  # "Interface 1/5 ..." on some NOSes
# Bonds to servers: EOS "Port-Channel35", NX-OS "port-channel23", SONiC "PortChannel101".
# Only when no physical port is named: "port-channel23: Ethernet1/15 is down" is about Ethernet1/15.
_LAG_PORT = r"(?i)\b(port-?channel ?\d+)\b"

# IOS long interface names -> Cisco's own short forms; Ethernet -> eth (NX-OS "Eth1/1").
_PORT_PREFIXES = [("tengigabitethernet", "te"), ("twentyfivegige", "twe"), ("fortygigabitethernet", "fo"),
                  ("hundredgigabitethernet", "hu"), ("hundredgige", "hu"), ("twogigabitethernet", "tw"),
                  ("fivegigabitethernet", "fi"), ("gigabitethernet", "gi"), ("fastethernet", "fa"),
                  ("ethernet", "eth"), ("infiniband", "ib"), ("port-?channel", "po")]


def _state(word: str) -> str:
    """Free-text port transitions to ``word`` as NOSes print them (lowercased)."""
    return (rf"changed state (?:from \w+ )?to {word}|carrier(?: is|:)? {word}"  # IOS/EOS LINEPROTO; switchd
            # NVUE "operational state is Down"; SONiC orchagent "oper state set from up to down",
            # "Set operation status DOWN to host interface Ethernet8"
            rf"|(?:oper(?:ational|ation)?|link) (?:state|status) (?:is |(?:changed|set) (?:from \w+ )?to )?{word}"
            rf"|link (?:is |went )?{word}"
            rf"|\b(?:interface|port) \S+,? is (?:now )?{word}"  # NX-OS "individual port Ethernet1/33 is down"
            rf"|\boper {word}\b")  # Cumulus switchd "swp51: ifindex 54, oper down", "ifi 20, oper up"


# Administrative transitions are link transitions both ways: a shutdown takes the
# link down (the taxonomy tells it from a failure by its wording) and an admin up
# ends that outage on the switch's own word (a port channel's admin up from
# teammgrd may be all a SONiC log says of it); the oper/carrier line that follows,
# when one does, is one more up of the same port.
_DOWN = (_state("down") + r"|changed state to administratively down"
         r"|\badmin down\b|admin status to down")  # Cumulus "admin down"; SONiC "admin status to down"
_UP = _state("up") + r"|\badmin up\b|admin status to up"  # Cumulus, NX-OS "is admin up"; SONiC
# Lines that name a port and a state but report no transition: SONiC netlink
# dumps and host-interface creation, failed attempts, MAC moves ("host ... is
# flapping between interface Port-Channel1 and interface Ethernet18").
_NO_TRANSITION = r"failed to |create host interface|nlmsg type|is flapping between|has moved from"
# Mnemonics that are link transitions whatever the text says. EOS errdisable
# shuts the port; ETH_PORT_CHANNEL PORT_DOWN/PORT_INDIVIDUAL_DOWN is a member
# port going down.
_CODE_DOWN = r"-IF_DOWN|^ETH_PORT_CHANNEL-\d-PORT_(?:INDIVIDUAL_)?DOWN$|-ERRDISABLE$"
_CODE_UP = r"-IF_(?:ADMIN_)?UP$|^ETH_PORT_CHANNEL-\d-PORT_UP$"
_PORT_ERRORS = (r"symbol error|\bber\b|bit error|\bcrc\b|fcs error|parity|excessive_\w*error|input errors"
                r"|pcs error|fec (?:un)?correct")
_OPTICS = r"xcvr|sff8472|transceiver|\brx power|\btx power|\boptic|\bddm\b|\bdom\b"


def normalize_port(expr: pl.Expr) -> pl.Expr:
    """Canonical port name, applied to log devices and to the topology's port
    column alike: lowercase, no spaces, Ethernet1/42|Eth1/42 -> eth1/42,
    GigabitEthernet2/0/4 -> gi2/0/4, TenGigabitEthernet2/0/17 -> te2/0/17,
    Port-Channel35|PortChannel35 -> po35; swp51, ib1/5 and bare 1/5 stay as they are."""
    out = expr.str.to_lowercase().str.replace_all(r"\s+", "")
    for long, short in _PORT_PREFIXES:
        out = out.str.replace(f"^{long}", short)
    return out


def _kind(m: pl.Expr, code: pl.Expr, device: pl.Expr) -> pl.Expr:
    """``m`` is the lowercased message (a column: eager when/then would lowercase per branch)."""
    c = code.fill_null("")
    has_dev = device.is_not_null()
    return (
        pl.when(m.str.contains(r"^last message repeated \d+ times?")).then(pl.lit("repeat"))
        # NX-OS states the reason in the mnemonic (IF_DOWN_LINK_FAILURE, IF_DOWN_ADMIN_DOWN ...);
        # rules tell admin-down from failures by code, so all IF_DOWN_* are link_down.
        .when(c.str.contains(_CODE_DOWN)).then(pl.lit("link_down"))
        .when(c.str.contains(_CODE_UP)).then(pl.lit("link_up"))
        .when(m.str.contains(_NO_TRANSITION)).then(pl.lit("other"))
        .when(m.str.contains(r"flap")).then(pl.lit("link_flap"))
        .when(m.str.contains(_PORT_ERRORS)).then(pl.lit("port_errors"))
        .when(m.str.contains(_OPTICS) | c.str.contains("XCVR|SFF8472")).then(pl.lit("optics"))
        # Free-text link states only count when they name a port: "changed state to
        # down" is also printed for VLANs, BFD and routing sessions.
        .when(has_dev & m.str.contains(_DOWN)).then(pl.lit("link_down"))
        .when(has_dev & m.str.contains(_UP)).then(pl.lit("link_up"))
        .otherwise(pl.lit("other"))
    )


def _year_reference(ctx: ParseContext) -> tuple[int, int]:
    """(year, month) that year-less stamps are placed against. A configured
    year takes every month as is; the file mtime rolls later months back."""
    if ctx.options.syslog_year:
        return ctx.options.syslog_year, 12
    mtime = ctx.mtime
    return mtime.year, mtime.month


def stream_parts(chunks: Iterable[pl.DataFrame], ctx: ParseContext) -> Iterator[ParseResult]:
    """A large log piece by piece (analysis/ingest/parts.py): every line is read on its own."""
    return each_piece(parse, chunks, ctx)


def parse(lines: pl.DataFrame, ctx: ParseContext) -> ParseResult:
    return batched.single(parse_batch(batched.numbered(lines), [ctx]))


def parse_batch(lines: pl.DataFrame, ctxs: list[ParseContext]) -> batched.BatchResult:
    """Many switch logs at once (analysis.ingest.parsers.batched)."""
    blank = lines["text"].str.strip_chars().str.len_chars() == 0
    skipped = batched.counts(lines["fid"].filter(blank))
    df = lines.filter(~blank)

    # <PRI> is common to every shape; take it off once.
    df = df.with_columns(
        pri=pl.col("text").str.extract(r"^\s*<(\d{1,3})>", 1).cast(pl.Int32, strict=False),
        body=pl.col("text").str.replace(r"^\s*(?:<\d{1,3}>)?\s*", ""),
    )
    # First matching shape wins. A cheap match test routes each line to its
    # shape and the (slower) capture runs once per line, on its own shape only.
    parts, rest = [], df
    for shape, pattern in PATTERNS.items():
        pattern = f"^(?P<hdr>{pattern})"
        hit = rest["body"].str.contains(pattern)
        sub, rest = rest.filter(hit), rest.filter(~hit)
        if sub.height:
            groups = sub["body"].str.extract_groups(pattern).struct.unnest()
            parts.append(sub.with_columns(
                pl.lit(shape).alias("shape"), pl.col("body").str.slice(groups["hdr"].str.len_chars()).alias("msg"),
                *[groups[f] if f in groups.columns else pl.lit(None, pl.Utf8).alias(f) for f in FIELDS]))
    unmatched = rest
    # a file of which no line has a header is no switch log: none of its lines is read
    headed = set(pl.concat([p["fid"] for p in parts]).unique().to_list()) if parts else set()
    unrecognised = {fid: "no line has a switch syslog header (RFC 3164/5424, ISO, NX-OS)"
                    for fid in set(unmatched["fid"].unique().to_list()) - headed}
    df = pl.concat(parts) if parts else df.clear().with_columns(
        pl.lit(None, pl.Utf8).alias("shape"), *[pl.lit(None, pl.Utf8).alias(f) for f in FIELDS + ["msg"]])

    # A 3164 tag that is a zone abbreviation ("ac45ce-sr1 AEST: %SFF...") is a zone, not a program.
    tz_tag = pl.col("prog").str.to_uppercase().is_in(list(TZ_ABBREV_MINUTES)) & pl.col("shape").is_in(
        ["rfc3164", "relay-3164"])
    df = df.with_columns(
        tz=pl.when(tz_tag).then(pl.col("prog")).otherwise(pl.col("tz")),
        prog=pl.when(tz_tag | (pl.col("prog") == "-")).then(None).otherwise(pl.col("prog")),
        host=pl.when(pl.col("host") == "-").then(None).otherwise(pl.col("host")),
        msg=pl.col("msg").str.strip_prefix("\ufeff"),  # RFC 5424 BOM
        mon=pl.coalesce(pl.col("mon").cast(pl.Int32, strict=False), month_number(pl.col("mon"))),
    )

    # --- time: device stamp (year or inferred) + zone/offset -> naive UTC ---
    year = pl.col("year").cast(pl.Int32, strict=False)
    if df.select(year.is_null().any()).item():
        refs = [_year_reference(ctx) for ctx in ctxs]
        year = pl.coalesce(year, infer_year(pl.col("mon"), batched.per_file([y for y, _ in refs], pl.Int32),
                                            batched.per_file([m for _, m in refs], pl.Int32)))
    stamp = pl.concat_str([year, pl.lit("-"), pl.col("mon"), pl.lit("-"), pl.col("day"), pl.lit(" "),
                           pl.col("H"), pl.lit(":"), pl.col("M"), pl.lit(":"), pl.col("S")])
    naive = stamp.str.to_datetime("%Y-%m-%d %H:%M:%S", strict=False, time_unit="us") + pl.duration(
        microseconds=pl.col("frac").str.slice(1, 6).str.pad_end(6, "0").cast(pl.Int64).fill_null(0))
    off = pl.col("off").str.replace(":", "").str.replace("^Z$", "+0000")
    off_min = (pl.when(off.str.slice(0, 1) == "-").then(-1).otherwise(1)
               * (off.str.slice(1, 2).cast(pl.Int64) * 60 + off.str.slice(3, 2).cast(pl.Int64)))
    # Materialised once: the when/then below would evaluate the parse per branch.
    df = df.with_columns(_naive=naive, _off=off_min)
    naive = pl.col("_naive")
    df = df.with_columns(event_time=pl.when(pl.col("_off").is_not_null()).then(naive - pl.duration(minutes=pl.col("_off")))
                         .otherwise(shift_by_abbrev(naive, pl.col("tz"), ctxs[0].options.tz)))
    t = pl.col("event_time")
    bad_time = df.filter(t.is_null()).with_columns(
        why=pl.lit("invalid timestamp (impossible date/time or a local time skipped by DST)"))
    outside = df.filter(t.is_not_null() & ~in_years(t)).with_columns(why=outside_years(t))
    df = df.filter(in_years(t))

    # --- message fields ---
    code_parts = pl.col("msg").str.extract_groups(_CODE)
    # A relayed line's own PRI is the switch's; the outer one is the relay's.
    pri = pl.coalesce(pl.col("ipri").cast(pl.Int32, strict=False), pl.col("pri"))
    df = df.with_columns(_code=code_parts, _lmsg=pl.col("msg").str.to_lowercase()).with_columns(
        device=normalize_port(pl.coalesce(pl.col("msg").str.extract(_PORT, 1),
                                          pl.col("msg").str.extract(_BARE_PORT, 1),
                                          pl.col("msg").str.extract(_LAG_PORT, 1))),
        code=pl.coalesce(pl.col("_code").struct.field("code"), pl.col("prog")),
        # The header's level (PRI, SONiC's level word), then the mnemonic's digit,
        # then Onyx's "[mgmtd.NOTICE]".
        severity=pl.coalesce(
            pl.when(pri <= 191).then(pri % 8).cast(pl.Int32),
            pl.col("levelword").str.to_lowercase().replace_strict(_WORD_LEVEL, default=None, return_dtype=pl.Int32),
            pl.col("_code").struct.field("lvl").cast(pl.Int32),
        ).replace_strict(dict(enumerate(SEVERITIES)), default=None, return_dtype=pl.Utf8),
    ).with_columns(
        severity=pl.coalesce(pl.col("severity"), pl.col("msg").str.extract(_ONYX_LEVEL, 1).str.to_lowercase()
                             .replace_strict(_WORD_SEVERITY, default=None, return_dtype=pl.Utf8)),
        kind=_kind(pl.col("_lmsg"), pl.col("code"), pl.col("device")),
    )
    events = df.select(
        pl.col("event_time").cast(pl.Datetime("us")),
        pl.lit(None, pl.Utf8).alias("host"),
        pl.lit("switch").alias("source"),
        "kind", "code", "severity",
        pl.col("msg").alias("message"),
        "device",
        pl.coalesce(pl.col("host"), batched.per_file([c.host_hint for c in ctxs], pl.Utf8)).alias("reporter"),
        "line_no",
    ).sort("line_no")

    rejects = pl.concat([
        make_rejects(unmatched["line_no"], unmatched["text"],
                     "no switch syslog header (expected RFC 3164/5424, ISO-stamp rsyslog or NX-OS stamp)"),
        make_rejects(bad_time["line_no"], bad_time["text"], bad_time["why"]),
        make_rejects(outside["line_no"], outside["text"], outside["why"]),
    ]).sort("line_no")
    shapes = batched.formats(df["fid"], df["shape"])
    return batched.BatchResult(tables={"node_events": events}, rejects=rejects, skipped=skipped,
                             formats={fid: "switch-syslog:" + shapes[fid] if fid in shapes else "switch-syslog"
                                      for fid in range(len(ctxs))}, unrecognised=unrecognised)
