"""Slurm accounting: ``sacct --parsable2`` dumps (with or without header).

sacct does not escape its delimiter or newlines inside free-text fields, so a
row can arrive with too many fields (``|`` in a job name) or split over lines
(newline in a comment or submit line). Rows with the right field count are
split in bulk; the rare wrong ones are repaired in Python (see
:mod:`analysis.ingest.parsers.sacct_repair`) or rejected with a reason.
"""
from __future__ import annotations

import re
from datetime import datetime
from collections.abc import Iterable, Iterator
from itertools import chain

import polars as pl

from analysis.ingest.contract import ParseContext, ParseResult
from analysis.ingest.hosts import HostlistError, expand_hostlist
from analysis.ingest.lines import empty_rejects, make_rejects
from analysis.ingest.parsers import batched
from analysis.ingest.parsers.sacct_repair import FREE_TEXT, JOBID_RE, repair_rows
from analysis.ingest.parts import each_piece
from analysis.ingest.options import YEARS
from analysis.ingest.timeutil import local_to_utc, parse_duration_s

# The field list docs/connect.md#slurm-accounting-required asks sites to dump; used when a file has no header.
DEFAULT_COLUMNS = ("JobID,JobIDRaw,JobName,User,Account,Partition,QOS,Priority,State,ExitCode,Reason,"
                   "Submit,Eligible,Start,End,Elapsed,NNodes,AllocTRES,NodeList,Restarts,SubmitLine").split(",")
DELIMITERS = ("^|^", "|#", "|", "\t")  # parsable2 default, gcm dumps, --delimiter=$'\t'
TIME_FMT = "%Y-%m-%dT%H:%M:%S"  # SLURM_TIME_FORMAT=standard; a space instead of T is accepted too
TOOL_MESSAGE = r"(?i)^\s*(?:sacct|sacctmgr|srun|sbatch|slurm\w*)\s*:|^\s*(?:error|warning|fatal)\s*:"
_STATE_RE = r"^[A-Z_]+[+*]?(?:\s+by\s+\S+)?$"


def detect_delimiter(first_line: str) -> str:
    for delim in DELIMITERS:
        if delim in first_line:
            return delim
    return "|"


# A row continues on the next line only when its last field is free text
# (SubmitLine with a newline); a line that starts like a JobID is a row of its
# own (truncated), never a continuation, and at most this many lines fold.
MAX_CONTINUATION_LINES = 64
_ROW_START = r"^\s*\d+(?:_(?:\d+|\[[^\]]*\]))?(?:\+\d+)?(?:\.[A-Za-z0-9_+-]+)?\s*$"


def _columns(lines: pl.DataFrame, ctx: ParseContext) -> tuple[list[str], str, int | None]:
    """Column names, delimiter, and the line_no of the header (None: no header)."""
    nonblank = lines.filter(pl.col("text").str.strip_chars() != "")
    if nonblank.height == 0:
        return list(DEFAULT_COLUMNS), ctx.options.sacct_delimiter or "|", None
    first_no, first = nonblank.row(0)
    delim = ctx.options.sacct_delimiter or detect_delimiter(first)
    fields = first.split(delim)
    if any(f.strip().lower() == "jobid" for f in fields):
        return [f.strip() for f in fields], delim, first_no
    return list(ctx.options.sacct_columns or DEFAULT_COLUMNS), delim, None


def _field(names: dict[str, int], name: str) -> pl.Expr:
    """A field of the split rows (field_0 ... field_<n-1>), NULL for a column the dump does not have."""
    idx = names.get(name.lower())
    return pl.lit(None, dtype=pl.Utf8) if idx is None else pl.col(f"field_{idx}")


def _time(expr: pl.Expr, tz: str) -> pl.Expr:
    return local_to_utc(expr.str.replace(" ", "T", literal=True).str.to_datetime(TIME_FMT, strict=False, time_unit="us"), tz)


# Bounds by comparison, not by taking each time's year apart (a fifth of the sacct parse when it did).
# Within a day of 1970-01-01 00:00 UTC: a time of 0 (unset) that a tool wrote as a local time, e.g.
# 1969-12-31T16:00:00 west of UTC, where sacct itself writes 'Unknown': absent, neither a time nor a reject.
_ZERO_FROM, _ZERO_TO = datetime(1969, 12, 31), datetime(1970, 1, 2)
_LAST = datetime(YEARS[1] + 1, 1, 1)


def _epoch_zero(t: pl.Expr) -> pl.Expr:
    return (t > _ZERO_FROM) & (t < _ZERO_TO)


def _out_of_years(t: pl.Expr) -> pl.Expr:
    """Outside YEARS and not time 0 (NULL for no time)."""
    return (t <= _ZERO_FROM) | (t >= _LAST)


def _absent(expr: pl.Expr) -> pl.Expr:
    return expr.is_null() | expr.str.strip_chars().is_in(["", "Unknown", "None"])


def _expand_nodes(node_lists: pl.Series, max_hosts: int) -> pl.DataFrame:
    """Expand each distinct NodeList once (lists repeat across steps and jobs). The hosts are gathered
    flat and listed by polars: a list column built from Python lists costs more than the expansion."""
    keys = node_lists.drop_nulls().unique().sort().to_list()
    owner, hosts, errors = [], [], {}
    for key in keys:
        try:
            nodes = expand_hostlist(key, max_hosts)
        except HostlistError as exc:
            errors[key] = f"unreadable NodeList: {exc}"
            continue
        owner.extend([key] * len(nodes))
        hosts.extend(nodes)
    listed = pl.DataFrame({"node_list": owner, "nodes": hosts}, schema={"node_list": pl.Utf8, "nodes": pl.Utf8}
                          ).group_by("node_list", maintain_order=True).agg("nodes")
    every = pl.DataFrame({"node_list": keys, "node_error": [errors.get(k) for k in keys]},
                         schema={"node_list": pl.Utf8, "node_error": pl.Utf8})
    every = every.join(listed, on="node_list", how="left", maintain_order="left")
    return every.select("node_list", pl.when(pl.col("node_error").is_null()).then(
        pl.col("nodes").fill_null(pl.lit([], pl.List(pl.Utf8)))).alias("nodes"), "node_error")


def parse(lines: pl.DataFrame, ctx: ParseContext) -> ParseResult:
    return batched.single(parse_batch(batched.numbered(lines), [ctx]))


def stream_parts(chunks: Iterable[pl.DataFrame], ctx: ParseContext) -> Iterator[ParseResult]:
    """A large dump piece by piece (analysis/ingest/parts.py), cut before a header or a row on one line of its own
    (as many fields as the first header names): a row split over lines, or a SubmitLine's continuation
    lines, stay in one piece. A piece is read as a batch of one file, with the columns of the header above it."""
    chunks = iter(chunks)
    first = next(chunks, pl.DataFrame(schema={"line_no": pl.Int64, "text": pl.Utf8}))
    columns, delim, _ = _columns(first, ctx)
    header = rf"(?i)(^|{re.escape(delim)})\s*JobID\s*({re.escape(delim)}|$)"
    above = None

    def starts(lines: pl.DataFrame) -> pl.Series:
        text = lines["text"]
        return (text.str.count_matches(delim, literal=True) == len(columns) - 1) | text.str.contains(header)

    def piece(lines: pl.DataFrame, ctx: ParseContext) -> ParseResult:
        nonlocal above
        result, above = _parse_batch(batched.numbered(lines), [ctx], above)
        return batched.single(result)

    yield from each_piece(piece, chain([first], chunks), ctx, starts)


def parse_batch(lines: pl.DataFrame, ctxs: list[ParseContext]) -> batched.BatchResult:
    """Many sacct dumps at once (analysis.ingest.parsers.batched). Concatenated dumps repeat the header, possibly
    with other columns: each header starts a segment read with its own column names, and the segments
    of every file that share column names are read together."""
    return _parse_batch(lines, ctxs)[0]


def _parse_batch(lines: pl.DataFrame, ctxs: list[ParseContext], above: tuple[list[str], str] | None = None
                 ) -> tuple[batched.BatchResult, tuple[list[str], str] | None]:
    """-> (the result, the columns and delimiter of the last header seen, or ``above`` when none).
    ``above`` (one file read in pieces: stream_parts): those of the header above ``lines``, which
    read the lines before the piece's first header; the piece is cut at every header."""
    opts = ctxs[0].options
    # each file's first non-blank line, found on the line numbers (a filter of every line's text costs more)
    nonblank = lines.select("fid", pl.int_range(pl.len()).alias("i"), ok=pl.col("text").str.strip_chars() != "")
    firsts = nonblank.filter("ok").group_by("fid", maintain_order=True).agg(pl.col("i").first())
    first_of = dict(zip(firsts["fid"].to_list(), lines["text"].gather(firsts["i"]).to_list()))
    delims = {fid: opts.sacct_delimiter or (detect_delimiter(first_of[fid]) if fid in first_of else "|")
              for fid in range(len(ctxs))}
    if above is not None:
        delims = {0: above[1]}
    result = batched.BatchResult(tables={}, rejects=empty_rejects())
    last = above
    for delim in sorted(set(delims.values())):
        fids = [fid for fid, d in delims.items() if d == delim]
        part = lines.filter(pl.col("fid").is_in(fids)) if len(delims) > 1 else lines
        # a file whose first line is a header is cut at every header line; one without is one segment
        headed = [fid for fid in fids if above is not None or fid in first_of and _header(first_of[fid], delim)]
        part = part.with_columns(header=_headers(part, headed, delim)).with_columns(
            new_seg=pl.col("header") | (pl.col("fid") != pl.col("fid").shift(1).fill_null(-1)))
        part = part.with_columns(seg=pl.col("new_seg").cum_sum())
        # each segment's first line is the one that starts it (no group_by over every line for it)
        starts = part.filter("new_seg").select("seg", "fid", "text", "header")
        part = part.drop("header", "new_seg")
        first_columns = {0: above[0]} if above is not None else {}
        seg_columns = {}
        for seg, fid, text, header in starts.iter_rows():
            if header:
                seg_columns[seg] = [f.strip() for f in text.split(delim)]
                first_columns.setdefault(fid, seg_columns[seg])
                last = (seg_columns[seg], delim)
        for seg, fid, _, header in starts.iter_rows():
            if not header:  # a headerless file, the lines before a file's first header, or a piece's before its first
                seg_columns[seg] = first_columns.get(fid) or list(opts.sacct_columns or DEFAULT_COLUMNS)
        by_columns: dict[tuple, list[int]] = {}
        for seg, columns in seg_columns.items():
            by_columns.setdefault(tuple(columns), []).append(seg)
        for columns, segs in by_columns.items():
            seg_lines = part.filter(pl.col("seg").is_in(segs)) if len(by_columns) > 1 else part
            _add(result, seg_lines, list(columns), delim, opts)
        for fid in fids:
            result.formats[fid] = f"sacct{delim}"
    if not result.tables:
        result.tables["sacct_records"] = _parse_fields(pl.DataFrame(schema={"line_no": pl.Int64}), list(DEFAULT_COLUMNS),
                                                       {}, opts.tz, opts.max_hostlist_hosts)[0]
    return result, last


def _headers(part: pl.DataFrame, headed: list[int], delim: str) -> pl.Series:
    """Whether each line of ``part`` is a header line of a file in ``headed``. The header regex runs only on
    the lines that name JobID at all (the same case-insensitive match, so no header is missed): on every line
    it costs several times more than the rest of the cut."""
    text = pl.col("text")
    named = part.select(pl.int_range(pl.len()).alias("i"), "fid", "text").filter(
        pl.col("fid").is_in(headed) & text.str.contains("(?i)JobID"))
    hits = named.filter(text.str.contains(rf"(?i)(^|{re.escape(delim)})\s*JobID\s*({re.escape(delim)}|$)"))["i"]
    return part.select(pl.int_range(pl.len()).is_in(hits.implode()).alias("header")).to_series()


def _header(first_line: str, delim: str) -> bool:
    return any(f.strip().lower() == "jobid" for f in first_line.split(delim))


def _add(result: batched.BatchResult, lines: pl.DataFrame, columns: list[str], delim: str, opts) -> None:
    """Parse segments that share ``columns`` into ``result``."""
    names: dict[str, int] = {}
    for i, col in enumerate(columns):
        names.setdefault(col.lower(), i)  # a repeated column (gcm dumps end with End twice): first wins
    if "jobid" not in names:  # the whole file is no sacct dump this parser can read
        for fid in lines["fid"].unique().to_list():
            result.unrecognised[fid] = "sacct dump without a JobID column (no header and no --sacct-columns?)"
        return
    header_text = delim.join(columns)
    stripped = pl.col("text").str.strip_chars()
    body = lines.filter((stripped != "") & (stripped != header_text)).with_columns(
        n=pl.col("text").str.count_matches(delim, literal=True) + 1)
    _count(result.skipped, batched.counts(lines["fid"]), batched.counts(body["fid"]), -1)

    body, merged_tail = _fold_trailing_lines(body, columns, delim)
    ncols = len(columns)
    good = body.filter(pl.col("n") == ncols).select(
        "line_no", f=pl.col("text").str.split_exact(delim, ncols - 1)).unnest("f")
    repaired, rejects, merged = repair_rows(body.filter(pl.col("n") != ncols), body, columns, names, delim)
    if repaired.height:
        fields = [f"field_{i}" for i in range(ncols)]
        repaired = repaired.select("line_no", f=pl.col("fields").list.to_struct(fields=fields)).unnest("f")
        good = pl.concat([good, repaired], how="vertical_relaxed")
    records, bad = _parse_fields(good, columns, names, opts.tz, opts.max_hostlist_hosts)
    if bad.height:
        raw = lines.join(bad, on="line_no").sort("line_no")
        rejects = pl.concat([rejects, make_rejects(raw["line_no"], raw["text"], raw["why"])])
    _count(result.merged, merged, merged_tail)
    old = result.tables.get("sacct_records")
    result.tables["sacct_records"] = records if old is None else pl.concat([old, records], how="vertical_relaxed")
    result.rejects = pl.concat([result.rejects, rejects], how="vertical_relaxed")


def _count(into: dict, add: dict, other: dict | None = None, sign: int = 1) -> None:
    """into[fid] += add[fid] + sign * other[fid]."""
    for fid in set(add) | set(other or {}):
        into[fid] = into.get(fid, 0) + add.get(fid, 0) + sign * (other or {}).get(fid, 0)


def _fold_trailing_lines(body: pl.DataFrame, columns: list[str], delim: str) -> tuple[pl.DataFrame, dict[int, int]]:
    """A newline inside the last field (a SubmitLine such as ``sbatch
    --wrap="a<newline>b"``) leaves a complete row followed by delimiter-free
    lines. A shell command line only continues over a newline inside quotes or
    after a backslash, so a line is folded back into the row only while the
    row's last field has a quote open or ends in ``\\``; any other delimiter-free line stays a line of its own (and is
    rejected), never silently absorbed. Lines fold within their segment only (``seg``: a file, or the
    part of a file under one header). Returns the body and fid -> lines folded."""
    if columns[-1].lower() not in FREE_TEXT or body.height == 0 or not (body["n"] == 1).any():
        return body, {}  # the usual dump: no delimiter-free line at all
    ncols = len(columns)
    cols = ["fid", "seg", "line_no", "text", "n"]
    new_seg = pl.col("seg") != pl.col("seg").shift(1).fill_null(-1)
    # Only groups of a row and the delimiter-free lines after it need the
    # window functions below; everything else passes through untouched.
    body = body.with_columns(grp=((pl.col("n") != 1) | new_seg).cum_sum())
    in_group = pl.len().over("grp") > 1
    untouched = body.filter(~in_group).select(cols)
    body = body.filter(in_group)
    # A tool's own message captured with the dump is not part of a submit line.
    not_text = pl.col("text").str.contains(TOOL_MESSAGE) | pl.col("text").str.contains(_ROW_START)
    own = pl.when(pl.col("n") == ncols).then(pl.col("text").str.split(delim).list.last()).otherwise(pl.col("text"))
    body = body.with_columns(grp=((pl.col("n") != 1) | not_text | new_seg).cum_sum(),
                             dq=own.str.count_matches('"', literal=True), sq=own.str.count_matches("'", literal=True),
                             bs=own.str.strip_chars_end().str.ends_with("\\"))
    before = lambda c: pl.col(c).cum_sum().over("grp") - pl.col(c)  # noqa: E731 - quotes seen before this line
    after_backslash = pl.col("bs").shift(1).over("grp").fill_null(False)  # `sbatch \` continued
    quote_open = (((before("dq") % 2 == 1) | (before("sq") % 2 == 1) | after_backslash)
                  & (pl.col("n").first().over("grp") == ncols))
    body = body.with_columns(cont=quote_open & (pl.int_range(pl.len()).over("grp") <= MAX_CONTINUATION_LINES))
    # a continuation ends at the first line that is not one (the quote closed)
    body = body.with_columns(cont=pl.col("cont") & ((~pl.col("cont")).cast(pl.Int32).cum_sum().over("grp") == 1))
    body = body.with_columns(grp2=(~pl.col("cont")).cum_sum())
    body = body.with_columns(fold=pl.len().over("grp2") > 1)
    folded = body.filter(pl.col("fold")).group_by("grp2", maintain_order=True).agg(
        pl.col("fid", "seg", "line_no").first(), pl.col("text").str.join("\n"), k=pl.len())
    rest = body.filter(~pl.col("fold")).select(cols)
    joined = folded.select("fid", "seg", "line_no", "text", n=pl.lit(ncols, pl.UInt32))
    merged = folded.group_by("fid").agg((pl.col("k") - 1).sum())
    return (pl.concat([untouched, rest, joined], how="vertical_relaxed").sort("line_no"),
            dict(zip(merged["fid"].to_list(), merged["k"].to_list())))


def _problems(names: dict[str, int], f) -> list[tuple[pl.Expr, pl.Expr]]:
    """(fault, reason) pairs, the first fault of a row giving its reason.
    A row with the right field count can still be shifted (a headerless dump in
    another column order) or use another time format: reject rather than store
    a state in the time column or a silently NULL start."""
    checks = [(pl.col("jid").struct.field("base").is_null(), pl.format("unparseable JobID '{}'", pl.col("job_id_text")))]
    if "state" in names:
        checks.append((~_absent(f("State")) & ~f("State").str.strip_chars().str.contains(_STATE_RE),
                       pl.format("unparseable State '{}'", f("State"))))
    for col in ("Submit", "Eligible", "Start", "End"):
        if col.lower() in names:
            t = pl.col(f"t_{col}")
            checks.append((~_absent(f(col)) & t.is_null(), pl.format("unparseable {} time '{}'", pl.lit(col), f(col))))
            checks.append((_out_of_years(t).fill_null(False), pl.format("{} time '{}' is outside the years {}-{}",
                                                                      pl.lit(col), f(col), pl.lit(YEARS[0]), pl.lit(YEARS[1]))))
    if "exitcode" in names:
        checks.append((~_absent(f("ExitCode")) & ~f("ExitCode").str.contains(r"^-?\d{1,9}:-?\d{1,9}$"),
                       pl.format("unparseable ExitCode '{}'", f("ExitCode"))))
    if "nnodes" in names:
        checks.append((~_absent(f("NNodes")) & ~f("NNodes").str.contains(r"^\d{1,9}$"),
                       pl.format("unparseable NNodes '{}'", f("NNodes"))))
    return checks


def _parse_fields(records: pl.DataFrame, columns: list[str], names: dict[str, int], tz: str,
                  max_hosts: int) -> tuple[pl.DataFrame, pl.DataFrame]:
    """Split rows (line_no, field_0 ... field_<n-1>) -> sacct_records rows, and (line_no, why) of the rows
    refused. Fields with few distinct values (State, ExitCode, AllocTRES, Elapsed) are read once per value."""
    if not names:  # (only for the schema of an empty result)
        names = {c.lower(): i for i, c in enumerate(columns)}
    records = records.with_columns(pl.lit(None, pl.Utf8).alias(f"field_{i}") for i in range(len(columns))
                                   if f"field_{i}" not in records.columns)
    f = lambda name: _field(names, name)  # noqa: E731
    blank_none = lambda e: pl.when(e.str.strip_chars().is_in(["", "Unknown", "None"])).then(None).otherwise(e)  # noqa: E731
    df = records.with_columns(
        job_id_text=f("JobID").str.strip_chars(),
        raw_text=f("JobIDRaw").str.strip_chars(),
    ).with_columns(jid=pl.col("job_id_text").str.extract_groups(JOBID_RE),
                   # each time parsed once: the checks and the columns below share them
                   **{f"t_{c}": _time(f(c), tz) for c in ("Submit", "Eligible", "Start", "End")})
    checks = _problems(names, f)
    df = df.with_columns(faulty=pl.any_horizontal([fault for fault, _ in checks]).fill_null(False))
    # reasons are written for the refused rows only: a when/then would format one for every row
    bad = df.filter("faulty").select("line_no", why=pl.coalesce([pl.when(fault).then(why) for fault, why in checks]))
    df = df.filter(~pl.col("faulty"))
    times = ("t_Submit", "t_Eligible", "t_Start", "t_End")
    if df.select(pl.any_horizontal(_epoch_zero(pl.col(c)) for c in times).any()).item():  # rare: no copy otherwise
        df = df.with_columns(pl.when(_epoch_zero(pl.col(c))).then(None).otherwise(pl.col(c)).alias(c) for c in times)
    jid = pl.col("jid").struct
    v = pl.col("v")
    df = _per_value(df, f("State"), state=v.str.strip_chars().str.extract_groups(r"^(?P<state>\S+)(?:\s+by\s+(?P<by>\S+))?"))
    df = _per_value(df, f("ExitCode"), exit_parts=v.str.extract_groups(r"^(?P<code>-?\d+):(?P<sig>-?\d+)$"))
    gpus_plain = v.str.extract(r"(?:^|,)gres/gpu=(\d+)").cast(pl.Int32, strict=False)
    gpus_typed = v.str.extract_all(r"gres/gpu:[^=,]+=(\d+)").list.eval(
        pl.element().str.extract(r"=(\d+)").cast(pl.Int32, strict=False)).list.sum()
    df = _per_value(df, f("AllocTRES"), n_gpus=pl.when(v.is_null() | (v == "")).then(None)
                    .otherwise(pl.coalesce(gpus_plain, gpus_typed, pl.lit(0, pl.Int32))).cast(pl.Int32))
    df = _per_value(df, f("Elapsed"), elapsed=parse_duration_s(v))
    state, exit_parts, tres, elapsed = pl.col("state"), pl.col("exit_parts"), f("AllocTRES"), pl.col("elapsed")
    out = df.select(
        job_id=pl.col("job_id_text").str.extract(r"^([^.]+)"),
        job_id_raw=pl.coalesce(pl.col("raw_text").str.extract(r"^([^.]+)"),
                               pl.col("job_id_text").str.extract(r"^([^.]+)")),
        step_id=jid.field("step"),
        array_job_id=pl.when(jid.field("task").is_not_null()).then(jid.field("base").cast(pl.Int64, strict=False)),
        array_task_id=jid.field("task").cast(pl.Int64, strict=False),
        array_task_spec=pl.when(jid.field("task").str.starts_with("[")).then(jid.field("task")),
        het_offset=jid.field("het").cast(pl.Int32, strict=False),
        user_name=blank_none(f("User")), account=blank_none(f("Account")),
        job_name=f("JobName"), partition=blank_none(f("Partition")), qos=blank_none(f("QOS")),
        priority=f("Priority").cast(pl.Int64, strict=False),
        state=state.struct.field("state").str.to_uppercase(),
        state_raw=f("State"),
        cancelled_by=state.struct.field("by"),
        exit_code=exit_parts.struct.field("code").cast(pl.Int32, strict=False),
        exit_signal=exit_parts.struct.field("sig").cast(pl.Int32, strict=False),
        reason=blank_none(f("Reason")),
        submit_time="t_Submit", eligible_time="t_Eligible", start_time="t_Start",
        # At a DST fall-back hour the local End can read earlier than Start;
        # Elapsed is exact, so it settles the end.
        end_time=pl.when((pl.col("t_End") < pl.col("t_Start")) & elapsed.is_not_null())
        .then(pl.col("t_Start") + pl.duration(seconds=elapsed)).otherwise(pl.col("t_End")),
        elapsed_s=pl.coalesce(elapsed, f("ElapsedRaw").cast(pl.Int64, strict=False)),
        n_nodes=pl.coalesce(f("NNodes"), f("AllocNodes")).cast(pl.Int32, strict=False),
        n_gpus="n_gpus",
        alloc_tres=blank_none(tres),
        node_list=pl.when(f("NodeList").str.strip_chars() == "None assigned").then(None)
        .otherwise(blank_none(f("NodeList"))),
        restarts=f("Restarts").cast(pl.Int32, strict=False),
        submit_line=blank_none(f("SubmitLine")),
        # sacct --format=Cluster,...: the slurmdbd's name for the cluster (NULL when the dump has no such column)
        cluster=blank_none(f("Cluster").str.strip_chars()),
        line_no=pl.col("line_no"),
    )
    out = out.join(_expand_nodes(out["node_list"], max_hosts), on="node_list", how="left", maintain_order="left")
    # a row whose nodes cannot be named is a reject: blaming nodes needs them
    bad = pl.concat([bad, out.filter(pl.col("node_error").is_not_null()).select("line_no", why="node_error")])
    out = out.filter(pl.col("node_error").is_null()).drop("node_error")
    out = out.with_columns(nodes=pl.when(pl.col("node_list").is_null())
                           .then(pl.lit([], dtype=pl.List(pl.Utf8))).otherwise(pl.col("nodes")))
    return out, bad


def _per_value(df: pl.DataFrame, column: pl.Expr, **exprs: pl.Expr) -> pl.DataFrame:
    """``exprs`` (on column ``v``) computed once per distinct value of ``column`` and joined back: a dump
    of a million rows holds a few dozen states, exit codes and TRES strings."""
    values = df.select(v=column).unique()
    return df.with_columns(v=column).join(values.with_columns(**exprs), on="v", how="left", nulls_equal=True,
                                          maintain_order="left").drop("v")
