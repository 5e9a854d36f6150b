"""Health-check results -> ``node_events`` (source 'health', kind 'health_check').

Two shapes, decided per line (a file may mix them):

1. JSON lines: one object per line with time, host, check, severity, message
   (aliases below). code = check name, severity lowercased as written, reporter
   = host. A host missing from the object falls back to ctx.host_hint (a per-host file's
   name or folder; a dated daily file's name names no host: the line is then a reject). Decoded
   in bulk (analysis.ingest.parsers.jsonlines); a line that does not decode is a
   reject with the reason (cut off, nested too deep, number too large).
2. LBNL NHC output (github.com/mej/nhc). die() writes
   'Health check failed:  <check>:  <detail>' to syslog (tag nhc[pid], level
   daemon.err) and 'ERROR:  nhc:  Health check failed:  ...' to /var/log/nhc.log;
   with NHC_TS=1 log lines start '[<epoch>] - '. Accepted carriers: RFC 3164
   syslog ('Jan 15 10:23:45 gpu001 nhc[1234]: ...'), ISO-stamped syslog, and
   NHC log lines with or without the NHC_TS prefix. Messages:
   * 'Health check failed:' -> severity 'critical', code = the check_* name
     (or 'nhc' when die() was called outside a check, e.g. the watchdog);
   * '<check>: ... (non-fatal)' and 'WARNING: ...' -> severity 'warning';
   * 'Node Health Check completed successfully (Ns).' -> severity 'ok', code 'nhc'.
   * 'Node Health Check starting.', 'Running check: ...', 'DEBUG: ...' progress
     chatter -> skipped: they carry no result.
   Decision on lines without a timestamp (plain nhc.log): a failure or warning
   there is REJECTED ('no timestamp'), so the loss is visible and the fix
   (NHC_TS=1 or syslog) obvious; chatter and success lines are skipped.
   The log file repeats each failure ('Health check failed' then 'ERROR: nhc:
   Health check failed'); the ERROR copy right after an identical failure is
   counted as merged into the first. Syslog lines of other programs are skipped.
   Any other line (other NHC messages, text that is neither JSON nor NHC) is
   rejected: nothing is dropped without a count and a reason.
A file with no JSON object and no NHC line at all raises UnrecognisedFormat.
"""
from __future__ import annotations

from collections.abc import Iterable, Iterator

import polars as pl

from analysis.ingest.contract import ParseContext, ParseResult
from analysis.ingest.lines import make_rejects
from analysis.ingest.parsers import batched, jsonlines
from analysis.ingest.parsers.csvlines import parse_time_any
from analysis.ingest.parts import each_piece
from analysis.ingest.timeutil import in_years, infer_year, local_to_utc, month_number, outside_years

KEYS = {
    "time": ("time", "timestamp", "ts", "@timestamp", "event_time", "datetime", "date"),
    "host": ("host", "node", "hostname", "nodename", "node_name"),
    "check": ("check", "name", "check_name", "test", "checker"),
    "severity": ("severity", "status", "level", "result", "state"),
    "message": ("message", "msg", "details", "detail", "output", "reason"),
}
EVENTS = ["event_time", "host", "source", "kind", "code", "severity", "message", "device", "reporter", "line_no"]

_RFC3164 = (r"^(?P<mon>[A-Z][a-z]{2})\s+(?P<day>\d{1,2})\s+(?P<hms>\d{2}:\d{2}:\d{2})\s+(?P<shost>\S+)\s+"
            r"(?P<tag>[^\s\[:]+)(?:\[\d+\])?:\s*(?P<smsg>.*)$")
_ISOSYS = (r"^(?P<iso>\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\S*)\s+(?P<ihost>\S+)\s+"
           r"(?P<itag>[^\s\[:]+)(?:\[\d+\])?:\s*(?P<imsg>.*)$")
_NHCTS = r"^\[(?P<epoch>\d{9,11})\]\s+-\s+(?P<tmsg>.*)$"
_FAIL = r"^(?:ERROR:\s+\S+:\s+)?Health check failed:\s*(?P<frest>.*)$"
_CHATTER = r"^(?:Node Health Check starting|Running check:|DEBUG:)"
_CHECK = r"^(?P<chk>[A-Za-z_][\w.-]*):\s+(?P<detail>.*)$"


NOT_HEALTH = ("not health-check output: expected JSON lines (time, host, check, severity, message) "
              "or LBNL NHC log/syslog lines ('nhc[pid]: Health check failed:  check_x:  ...')")


def stream_parts(chunks: Iterable[pl.DataFrame], ctx: ParseContext) -> Iterator[ParseResult]:
    """A large log piece by piece (analysis/ingest/parts.py), cut before a line that is no failure, so the
    'ERROR: nhc:' copy of a failure stays with it."""
    return each_piece(parse, chunks, ctx,
                      lambda lines: ~lines["text"].str.contains("Health check failed", literal=True))


def parse(lines: pl.DataFrame, ctx: ParseContext) -> ParseResult:
    return batched.single(parse_batch(batched.numbered(lines), [ctx]))


def parse_batch(lines: pl.DataFrame, ctxs: list[ParseContext]) -> batched.BatchResult:
    """Many health logs at once (analysis.ingest.parsers.batched)."""
    text = pl.col("text").str.strip_chars()
    frame = lines.with_columns(blank=text == "", is_json=text.str.starts_with("{"))
    json_part = frame.filter(pl.col("is_json"))
    nhc_part = frame.filter(~pl.col("is_json") & ~pl.col("blank"))
    skipped = batched.counts(frame.filter(pl.col("blank"))["fid"])
    j_rows, j_bad = _json(json_part, ctxs)
    n_rows, n_bad, n_skipped, n_merged, n_known = _nhc(nhc_part, ctxs)
    n_json, n_nhc = batched.counts(json_part["fid"]), batched.counts(nhc_part["fid"])
    n_json_bad = batched.counts(batched.fid_of(j_bad["line_no"]))
    unrecognised, formats = {}, {}
    for fid in range(len(ctxs)):
        jp, known = n_json.get(fid, 0), n_known.get(fid, 0)
        if jp and n_json_bad.get(fid, 0) == jp and known == 0 or not jp and known == 0 and n_nhc.get(fid, 0):
            unrecognised[fid] = NOT_HEALTH
        formats[fid] = "+".join(f for f, n in (("health-jsonl", jp), ("nhc", known)) if n) or "health"
    return batched.BatchResult(tables={"node_events": pl.concat([j_rows, n_rows]).sort("line_no")},
                             rejects=pl.concat([j_bad, n_bad]).sort("line_no"),
                             skipped={fid: skipped.get(fid, 0) + n_skipped.get(fid, 0) for fid in range(len(ctxs))},
                             merged=n_merged, formats=formats, unrecognised=unrecognised)


_SCHEMA = {k: pl.Utf8 for keys in KEYS.values() for k in keys}  # other keys are not read


def _distinct_times(texts: pl.Series, tz: str) -> pl.Series:
    """parse_time_any once per distinct text: a check round stamps thousands of lines alike."""
    distinct = texts.unique().to_frame("time").with_columns(t=parse_time_any(pl.col("time"), tz))
    return texts.to_frame("time").join(distinct, on="time", how="left", maintain_order="left")["t"]


def _json(part: pl.DataFrame, ctxs: list[ParseContext]) -> tuple[pl.DataFrame, pl.DataFrame]:
    # one bulk decode (jsonlines) instead of one JSON path query per alias key per line
    decoded = jsonlines.decode(part.select("line_no", "text"), schema=_SCHEMA)
    exact = pl.DataFrame({"line_no": [no for no, _, _ in decoded.objects],
                          **{k: [jsonlines.as_text(obj.get(k)) for _, _, obj in decoded.objects] for k in _SCHEMA}},
                         schema={"line_no": pl.Int64, **_SCHEMA})
    values = pl.concat([*[f.select("line_no", *_SCHEMA) for f in decoded.frames], exact])
    part = part.select("fid", "line_no", "text")
    # (one decoded block holds the lines in order: no join needed to put their text beside them)
    aligned = values.height == part.height and values["line_no"].equals(part["line_no"])
    rows = (values.hstack(part.drop("line_no")) if aligned else values.join(part, on="line_no")).select(
        "fid", "line_no", "text", **{k: pl.coalesce([pl.col(a).replace("", None) for a in v]) for k, v in KEYS.items()})
    rows = rows.with_columns(t=_distinct_times(rows["time"], ctxs[0].options.tz),
                             host=pl.col("host").fill_null(batched.per_file([c.host_hint for c in ctxs], pl.Utf8)))
    why = (pl.when(pl.col("time").is_null()).then(pl.lit("no time field (time/timestamp/ts)"))
           .when(pl.col("t").is_null()).then(pl.format("unparseable time '{}'", pl.col("time")))
           .when(~in_years(pl.col("t"))).then(outside_years(pl.col("t"), pl.col("time")))
           .when(pl.col("host").is_null()).then(pl.lit("no host field (host/node/hostname) and no host in the file name"))
           .when(pl.col("check").is_null()).then(pl.lit("no check name (check/name/check_name)")))
    rows = rows.with_columns(why=why)
    bad = rows.filter(pl.col("why").is_not_null())
    good = rows.filter(pl.col("why").is_null()).with_columns(
        code=pl.col("check"), severity=pl.col("severity").str.to_lowercase())
    rejects = pl.concat([decoded.rejects, make_rejects(bad["line_no"], bad["text"], bad["why"])]).sort("line_no")
    return _events(good.sort("line_no")), rejects


def _nhc(part: pl.DataFrame, ctxs: list[ParseContext]) -> tuple[pl.DataFrame, pl.DataFrame, dict, dict, dict]:
    """Rows, rejects, and fid -> lines skipped, merged, and known as NHC's."""
    tz = ctxs[0].options.tz
    present = set(part["fid"].unique().to_list())  # (a stat per file only for files with NHC lines)
    refs = [c.mtime if fid in present and c.path.exists() else None for fid, c in enumerate(ctxs)]
    year = batched.per_file([c.options.syslog_year or (ref.year if ref else 1970) for c, ref in zip(ctxs, refs)],
                          pl.Int32)
    ref_month = batched.per_file([12 if c.options.syslog_year or not ref else ref.month for c, ref in zip(ctxs, refs)],
                               pl.Int32)
    g = part.with_columns(pl.col("text").str.extract_groups(_RFC3164).alias("a"),
                          pl.col("text").str.extract_groups(_ISOSYS).alias("b"),
                          pl.col("text").str.extract_groups(_NHCTS).alias("c")).unnest("a", "b", "c")
    mon = month_number(pl.col("mon"))
    stamp3164 = pl.datetime(infer_year(mon, year, ref_month), mon, pl.col("day").cast(pl.Int32, strict=False),
                            pl.col("hms").str.slice(0, 2).cast(pl.Int32), pl.col("hms").str.slice(3, 2).cast(pl.Int32),
                            pl.col("hms").str.slice(6, 2).cast(pl.Int32), time_unit="us")
    g = g.with_columns(
        syslog=pl.col("tag").is_not_null() | pl.col("itag").is_not_null(),
        nhc_tag=pl.coalesce("tag", "itag").str.contains(r"^nhc\b"),
        t=pl.coalesce(local_to_utc(stamp3164, tz), parse_time_any(pl.col("iso"), tz),
                      parse_time_any(pl.col("epoch"), tz)),
        host=pl.coalesce("shost", "ihost", batched.per_file([c.host_hint for c in ctxs], pl.Utf8)),
        msg=pl.coalesce("smsg", "imsg", "tmsg", pl.col("text")).str.strip_chars())
    fail = pl.col("msg").str.extract(_FAIL, 1)
    g = g.with_columns(fail=fail, is_error_copy=pl.col("msg").str.contains(r"^ERROR:\s+\S+:\s+Health check failed"))
    nonfatal = pl.col("msg").str.ends_with("(non-fatal)") & pl.col("msg").str.contains(r"^check_\w+:")
    warning = pl.col("msg").str.extract(r"^WARNING:\s+(.*)$", 1)
    success = pl.col("msg").str.contains(r"^Node Health Check completed successfully")
    body = pl.coalesce("fail", warning, pl.col("msg"))
    g = g.with_columns(
        severity=pl.when(pl.col("fail").is_not_null()).then(pl.lit("critical"))
        .when(nonfatal | warning.is_not_null()).then(pl.lit("warning"))
        .when(success).then(pl.lit("ok")),
        chk=body.str.extract(_CHECK, 1), detail=body.str.extract(_CHECK, 2))
    g = g.with_columns(
        code=pl.when(pl.col("chk").str.starts_with("check_")).then(pl.col("chk")).otherwise(pl.lit("nhc")),
        message=pl.when(pl.col("chk").str.starts_with("check_")).then(pl.col("detail")).otherwise(body),
        other_program=pl.col("syslog") & ~pl.col("nhc_tag"))
    # the 'ERROR: nhc: Health check failed' copy right after the same failure (in the same file)
    prev = lambda c: pl.when(pl.col("fid") == pl.col("fid").shift(1)).then(pl.col(c).shift(1))  # noqa: E731
    first = pl.col("fid") != pl.col("fid").shift(1).fill_null(-1)
    same = ((pl.col("fail") == prev("fail")) & pl.col("is_error_copy")
            & ~pl.col("is_error_copy").shift(1).fill_null(True) & ~first & (pl.col("host") == prev("host"))
            & (pl.col("t").is_null() & prev("t").is_null() | (pl.col("t") == prev("t"))))
    g = g.with_columns(merged=same.fill_null(False) & pl.col("severity").is_not_null())
    known = batched.counts(g.filter(~pl.col("other_program") & (pl.col("severity").is_not_null() | pl.col("msg").str.contains(
        r"^(Node Health Check|Running check:|DEBUG:|ERROR:|Health check)")) | pl.col("nhc_tag"))["fid"])
    result, t_ok = pl.col("severity").is_not_null(), pl.col("t").is_not_null()
    # Every line gets one disposition. Skips, each counted: a syslog line of
    # another program (a health folder may hold a whole /var/log/messages; the
    # kernel/ and switch/ sources read those lines), NHC progress chatter
    # (starting, 'Running check:', DEBUG: no result in it), and a success line
    # without a timestamp (nothing failed, and it cannot be placed in time).
    # Anything else that is not a row is a reject.
    g = g.with_columns(why=pl.when(pl.col("merged") | pl.col("other_program")).then(None)
                       .when(result & ~t_ok & pl.col("severity").is_in(["critical", "warning"]))
                       .then(pl.lit("NHC result without a timestamp (set NHC_TS=1 or ingest syslog)"))
                       .when(result & t_ok & ~in_years(pl.col("t")))
                       .then(outside_years(pl.col("t"), pl.coalesce("epoch", "iso", pl.col("t").cast(pl.Utf8))))
                       .when(result & t_ok & pl.col("host").is_null())
                       .then(pl.lit("NHC line names no host and the file name gives none"))
                       .when(result | pl.col("msg").str.contains(_CHATTER)).then(None)
                       .when(pl.col("nhc_tag") | pl.col("msg").str.contains(r"^(ERROR|WARNING):"))
                       .then(pl.lit("NHC message that is neither a check result nor a progress note"))
                       .otherwise(pl.lit("not a health-check line: neither a JSON object ({...}) "
                                         "nor an NHC log or syslog line")))
    bad = g.filter(pl.col("why").is_not_null())
    good = g.filter(pl.col("why").is_null() & result & t_ok & ~pl.col("merged") & ~pl.col("other_program"))
    n_merged = batched.counts(g.filter(pl.col("merged"))["fid"])
    n_good, n_bad = batched.counts(good["fid"]), batched.counts(bad["fid"])
    n_skipped = {fid: n - n_good.get(fid, 0) - n_bad.get(fid, 0) - n_merged.get(fid, 0)
                 for fid, n in batched.counts(part["fid"]).items()}
    return _events(good), make_rejects(bad["line_no"], bad["text"], bad["why"]), n_skipped, n_merged, known


def _events(good: pl.DataFrame) -> pl.DataFrame:
    return good.select(
        pl.col("t").alias("event_time"), "host", pl.lit("health").alias("source"),
        pl.lit("health_check").alias("kind"), pl.col("code"), pl.col("severity"),
        pl.col("message"), pl.lit(None, pl.Utf8).alias("device"), pl.col("host").alias("reporter"), "line_no")
