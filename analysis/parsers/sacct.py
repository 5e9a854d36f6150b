"""Slurm accounting: ``sacct --parsable2`` dumps (with or without header).

sacct does not escape its delimiter or newlines inside free-text fields, so a
row can arrive with too many fields (``|`` in a job name) or split over lines
(newline in a comment or submit line). Rows with the right field count are
split in bulk; the rare wrong ones are repaired in Python (see
:mod:`analysis.parsers.sacct_repair`) or rejected with a reason.
"""
from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from itertools import chain

import polars as pl

from analysis.hosts import HostlistError, expand_hostlist
from analysis.lines import make_rejects
from analysis.model import ParseContext, ParseResult, UnrecognisedFormat
from analysis.parsers.sacct_repair import FREE_TEXT, JOBID_RE, repair_rows
from analysis.parts import each_piece
from analysis.timeutil import local_to_utc, parse_duration_s

# The field list SPEC.md asks sites to dump; used when a file has no header.
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


def _field(df: pl.DataFrame, names: dict[str, int], name: str) -> pl.Expr:
    idx = names.get(name.lower())
    if idx is None:
        return pl.lit(None, dtype=pl.Utf8)
    return pl.col("fields").list.get(idx, null_on_oob=True)


def _time(expr: pl.Expr, tz: str) -> pl.Expr:
    return local_to_utc(expr.str.replace(" ", "T", literal=True).str.to_datetime(TIME_FMT, strict=False, time_unit="us"), tz)


def _absent(expr: pl.Expr) -> pl.Expr:
    return expr.is_null() | expr.str.strip_chars().is_in(["", "Unknown", "None"])


def _expand_nodes(node_lists: pl.Series, max_hosts: int) -> pl.DataFrame:
    """Expand each distinct NodeList once (lists repeat across steps and jobs)."""
    keys = node_lists.drop_nulls().unique().sort().to_list()
    values, errors = [], []
    for key in keys:
        try:
            values.append(list(expand_hostlist(key, max_hosts)))
            errors.append(None)
        except HostlistError as exc:
            values.append(None)
            errors.append(f"unreadable NodeList: {exc}")
    return pl.DataFrame({"node_list": keys, "nodes": values, "node_error": errors},
                        schema={"node_list": pl.Utf8, "nodes": pl.List(pl.Utf8), "node_error": pl.Utf8})


def parse(lines: pl.DataFrame, ctx: ParseContext) -> ParseResult:
    return _parse(lines, ctx)[0]


def stream_parts(chunks: Iterable[pl.DataFrame], ctx: ParseContext) -> Iterator[ParseResult]:
    """A large dump piece by piece (analysis/parts.py), cut before a header or a row on one line of its own
    (as many fields as the first header names): a row split over lines, or a SubmitLine's continuation
    lines, stay in one piece. A piece is read with the columns of the header above it."""
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
        result, above = _parse(lines, ctx, above)
        return result

    yield from each_piece(piece, chain([first], chunks), ctx, starts)


def _parse(lines: pl.DataFrame, ctx: ParseContext,
           above: tuple[list[str], str] | None = None) -> tuple[ParseResult, tuple[list[str], str] | None]:
    """-> (the result, the columns and delimiter of the last header seen). ``above``: those of the header
    above ``lines`` (a piece after the first), which reads the lines before their first header."""
    columns, delim, header_no = _columns(lines, ctx)
    if header_no is None and above is None:
        return _parse_segment(lines, columns, delim, ctx), None
    if header_no is None:
        columns, delim = above
    # Concatenated dumps repeat the header, possibly with other columns: each
    # header starts a segment parsed with its own column names.
    is_header = pl.col("text").str.contains(rf"(?i)(^|{re.escape(delim)})\s*JobID\s*({re.escape(delim)}|$)")
    segments = lines.with_columns(seg=is_header.cum_sum()).partition_by("seg", maintain_order=True, include_key=False)
    results = []
    for segment in segments:
        seg_columns, _, seg_header = _columns(segment, ctx)
        if seg_header is None:  # lines before the first header: read with the first header's (or the one above)
            seg_columns = columns
        results.append(_parse_segment(segment, seg_columns, delim, ctx))
        above = (seg_columns, delim)
    return ParseResult(
        tables={"sacct_records": pl.concat([r.tables["sacct_records"] for r in results], how="vertical_relaxed")},
        rejects=pl.concat([r.rejects for r in results], how="vertical_relaxed"),
        skipped=sum(r.skipped for r in results), merged=sum(r.merged for r in results), format=f"sacct{delim}"), above


def _parse_segment(lines: pl.DataFrame, columns: list[str], delim: str, ctx: ParseContext) -> ParseResult:
    names: dict[str, int] = {}
    for i, col in enumerate(columns):
        names.setdefault(col.lower(), i)  # a repeated column (gcm dumps end with End twice): first wins
    if "jobid" not in names:
        raise UnrecognisedFormat("sacct dump without a JobID column (no header and no --sacct-columns?)")
    header_text = delim.join(columns)
    blank = (pl.col("text").str.strip_chars() == "") | (pl.col("text").str.strip_chars() == header_text)
    body = lines.filter(~blank).with_columns(n=pl.col("text").str.count_matches(delim, literal=True) + 1)
    skipped = lines.height - body.height

    body, merged_tail = _fold_trailing_lines(body, columns, delim)
    good = body.filter(pl.col("n") == len(columns)).select(
        "line_no", fields=pl.col("text").str.split(delim))
    repaired, rejects, merged = repair_rows(body.filter(pl.col("n") != len(columns)), body,
                                            columns, names, delim)
    records = pl.concat([good, repaired], how="vertical_relaxed") if repaired.height else good
    records, bad = _parse_fields(records, names, ctx.options.tz, ctx.options.max_hostlist_hosts)
    if bad.height:
        raw = lines.join(bad, on="line_no").sort("line_no")
        rejects = pl.concat([rejects, make_rejects(raw["line_no"], raw["text"], raw["why"])])
    return ParseResult(tables={"sacct_records": records}, rejects=rejects,
                       skipped=skipped, merged=merged + merged_tail, format=f"sacct{delim}")


def _fold_trailing_lines(body: pl.DataFrame, columns: list[str], delim: str) -> tuple[pl.DataFrame, int]:
    """A newline inside the last field (a SubmitLine such as ``sbatch
    --wrap="a<newline>b"``) leaves a complete row followed by delimiter-free
    lines. A shell command line only continues over a newline inside quotes or
    after a backslash, so a line is folded back into the row only while the
    row's last field has a quote open or ends in ``\\``; any other delimiter-free line stays a line of its own (and is
    rejected), never silently absorbed."""
    if columns[-1].lower() not in FREE_TEXT or body.height == 0 or not (body["n"] == 1).any():
        return body, 0  # the usual dump: no delimiter-free line at all
    ncols = len(columns)
    # Only groups of a row and the delimiter-free lines after it need the
    # window functions below; everything else passes through untouched.
    body = body.with_columns(grp=(pl.col("n") != 1).cum_sum())
    in_group = pl.len().over("grp") > 1
    untouched = body.filter(~in_group).select("line_no", "text", "n")
    body = body.filter(in_group)
    # A tool's own message captured with the dump is not part of a submit line.
    not_text = pl.col("text").str.contains(TOOL_MESSAGE) | pl.col("text").str.contains(_ROW_START)
    own = pl.when(pl.col("n") == ncols).then(pl.col("text").str.split(delim).list.last()).otherwise(pl.col("text"))
    body = body.with_columns(grp=((pl.col("n") != 1) | not_text).cum_sum(),
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
        pl.col("line_no").first(), pl.col("text").str.join("\n"), k=pl.len())
    rest = body.filter(~pl.col("fold")).select("line_no", "text", "n")
    joined = folded.select("line_no", "text", n=pl.lit(ncols, pl.UInt32))
    return (pl.concat([untouched, rest, joined], how="vertical_relaxed").sort("line_no"),
            int((folded["k"] - 1).sum()))


def _problems(df: pl.DataFrame, names: dict[str, int], f, tz: str) -> pl.Expr:
    """The first reason a row's typed fields do not parse (NULL: row is fine).
    A row with the right field count can still be shifted (a headerless dump in
    another column order) or use another time format: reject rather than store
    a state in the time column or a silently NULL start."""
    checks = [pl.when(pl.col("jid").struct.field("base").is_null())
              .then(pl.format("unparseable JobID '{}'", pl.col("job_id_text")))]
    if "state" in names:
        checks.append(pl.when(~_absent(f("State")) & ~f("State").str.strip_chars().str.contains(_STATE_RE))
                      .then(pl.format("unparseable State '{}'", f("State"))))
    for col in ("Submit", "Eligible", "Start", "End"):
        if col.lower() in names:
            checks.append(pl.when(~_absent(f(col)) & pl.col(f"t_{col}").is_null())
                          .then(pl.format("unparseable {} time '{}'", pl.lit(col), f(col))))
    if "exitcode" in names:
        checks.append(pl.when(~_absent(f("ExitCode")) & ~f("ExitCode").str.contains(r"^-?\d{1,9}:-?\d{1,9}$"))
                      .then(pl.format("unparseable ExitCode '{}'", f("ExitCode"))))
    if "nnodes" in names:
        checks.append(pl.when(~_absent(f("NNodes")) & ~f("NNodes").str.contains(r"^\d{1,9}$"))
                      .then(pl.format("unparseable NNodes '{}'", f("NNodes"))))
    return pl.coalesce(checks)


def _parse_fields(records: pl.DataFrame, names: dict[str, int], tz: str,
                  max_hosts: int) -> tuple[pl.DataFrame, pl.DataFrame]:
    f = lambda name: _field(records, names, name)  # noqa: E731
    blank_none = lambda e: pl.when(e.str.strip_chars().is_in(["", "Unknown", "None"])).then(None).otherwise(e)  # noqa: E731
    df = records.with_columns(
        job_id_text=f("JobID").str.strip_chars(),
        raw_text=f("JobIDRaw").str.strip_chars(),
    ).with_columns(jid=pl.col("job_id_text").str.extract_groups(JOBID_RE),
                   # each time parsed once: the checks and the columns below share them
                   **{f"t_{c}": _time(f(c), tz) for c in ("Submit", "Eligible", "Start", "End")})
    df = df.with_columns(why=_problems(df, names, f, tz))
    bad = df.filter(pl.col("why").is_not_null()).select("line_no", "why")
    df = df.filter(pl.col("why").is_null())
    jid = pl.col("jid").struct
    state = f("State").str.strip_chars().str.extract_groups(r"^(?P<state>\S+)(?:\s+by\s+(?P<by>\S+))?")
    exit_parts = f("ExitCode").str.extract_groups(r"^(?P<code>-?\d+):(?P<sig>-?\d+)$")
    tres = f("AllocTRES")
    gpus_plain = tres.str.extract(r"(?:^|,)gres/gpu=(\d+)").cast(pl.Int32, strict=False)
    gpus_typed = tres.str.extract_all(r"gres/gpu:[^=,]+=(\d+)").list.eval(
        pl.element().str.extract(r"=(\d+)").cast(pl.Int32, strict=False)).list.sum()
    elapsed = parse_duration_s(f("Elapsed"))
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
        n_gpus=pl.when(tres.is_null() | (tres == "")).then(None)
        .otherwise(pl.coalesce(gpus_plain, gpus_typed, pl.lit(0, pl.Int32))).cast(pl.Int32),
        alloc_tres=blank_none(tres),
        node_list=pl.when(f("NodeList").str.strip_chars() == "None assigned").then(None)
        .otherwise(blank_none(f("NodeList"))),
        restarts=f("Restarts").cast(pl.Int32, strict=False),
        submit_line=blank_none(f("SubmitLine")),
        line_no=pl.col("line_no"),
    )
    out = out.join(_expand_nodes(out["node_list"], max_hosts), on="node_list", how="left", maintain_order="left")
    # a row whose nodes cannot be named is a reject: blaming nodes needs them
    bad = pl.concat([bad, out.filter(pl.col("node_error").is_not_null()).select("line_no", why="node_error")])
    out = out.filter(pl.col("node_error").is_null()).drop("node_error")
    out = out.with_columns(nodes=pl.when(pl.col("node_list").is_null())
                           .then(pl.lit([], dtype=pl.List(pl.Utf8))).otherwise(pl.col("nodes")))
    return out, bad
