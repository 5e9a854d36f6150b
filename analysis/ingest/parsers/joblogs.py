"""Job stdout/stderr -> ``job_log_lines``: the lines of a job's own output that
say why it stopped, as NCCL, PyTorch, CUDA, Python and Slurm print them.

The job is named by the file: ``slurm-<jobid>.out``, ``slurm-<jobid>_<task>.out``
(array task), ``<name>-<jobid>.out``, ``<jobid>.err``/``.log``, or any file in a
folder named by the job id (``joblogs/<jobid>/rank3.log``). A file that names no
job is unrecognised.

Prefixes are peeled off first, in the order launchers stack them: ``srun
--label`` (``12: ``), pdsh/DeepSpeed (``vm-07-05: ``; a host prefix must hold a
digit, so ``ValueError: ...`` is not one), torchrun's ``--tee`` (``[default3]:``: the
worker's *local* rank), PyTorch's ``[rank3]:`` (global rank), then NCCL's ``host:pid:tid [cudaDev]`` (with the optional
``file.cc:123`` of NCCL >= 2.19, and the ``[YYYY-MM-DD hh:mm:ss]`` stamp recent NCCL puts before its WARN lines by
default). What is left is classified:

  watchdog_timeout  [Rank 3] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=..., OpType=..., ..., Timeout(ms)=...) ran for ... milliseconds
  watchdog_position [PG 0 Rank 3] Timeout at NCCL work: N, last enqueued NCCL work: M, last completed NCCL work: K
                    (also "Exception (either an error or timeout) detected by watchdog at work: ...")
  peer_error        NET/IB : Got completion from peer <ip><port> with error|status=N ... (a transport error naming a peer)
  nccl_error        ncclRemoteError / ncclSystemError / ncclInternalError / NCCL error / DistBackendError / communicator aborted
  cuda_error        CUDA error: ..., CUBLAS_STATUS_*, uncorrectable ECC error
  connection_reset  "Connection reset by peer" from NCCL (WARN socketProgressOpt), c10d (TCPStore, socket.cpp,
                    ProcessGroupNCCL) or Gloo, when not the last line of a traceback (that stays an exception)
  exception         the last line of a Python traceback (``ValueError: ...``)
  srun_exit         srun: error: <host>: task(s) <ids>: Exited with exit code N | Killed | ...: one row per task
                    ("tasks 0-3,8": 0, 1, 2, 3, 8), the task -> host map of the step
  step_cancelled    slurmstepd: error: *** JOB|STEP <id> ON <host> CANCELLED AT <time> [DUE TO ...] ***
  nccl_init         NCCL INFO ... rank R nranks N cudaDev D ... (rank -> host, with the NCCL prefix)
  rank_map          DeepSpeed's global_rank_mapping={'host': [0, 1, ...], ...}: one row per rank
  progress          Megatron's " iteration   N/   M |" lines (time of the last progress, C4 detection), with
                    step = N and step_seconds from "elapsed time per iteration (ms): X"
  step_time         a training step a worker reports and how long its steps take: torchtitan's "step: N  loss:",
                    DeepSpeed's "step=N, skipped=" and ThroughputTimer lines, nanoGPT's "iter N: ..., time Xms",
                    a tqdm bar's "N/M [..., Xs/it]" (code = the shape; steplines.py says how each is read)
  nccl_warn         any other NCCL WARN line (mostly harmless: kept, classified info), whatever a launcher or
                    container put before it
  elastic_failure   torchrun's ChildFailedError block, one row per field line (code = the field): each
                    failed worker's "time : 2024-03-05_14:22:31", "host : <fqdn>", "rank : R (local_rank: L)",
                    "exitcode : C (pid: P)", and the "Failures:" / "Root Cause (first observed failure):"
                    headers (code failures / root). The host line and the rank line under it name the host
                    of a global and a local rank (put together in sql/derive/build_job_log_events.sql).

Every other line is skipped on purpose (counted): a job log is mostly the
program's own chatter. A job log can be gigabytes (NCCL_DEBUG=INFO on
thousands of ranks): lines are first screened with literal substring tests
(Aho-Corasick, no regex), NCCL INFO lines other than init lines are dropped
there, and each kind's fields are extracted on that kind's lines only. The
engine feeds the file in chunks (``stream_parts``) and writes each chunk's rows,
so memory stays bounded. Times: a leading ``[YYYY-MM-DD hh:mm:ss,ms]`` or ISO
stamp, PyTorch/glog ``E1125 09:40:16.123`` (no year: taken from the file's
modification time) and slurmstepd's ``CANCELLED AT``; naive stamps are in
ctx.options.tz. Lines without one get their time from the file's neighbours
when the events are built (analysis/derive/joblogs.py).
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Iterable, Iterator

import polars as pl

from analysis.ingest.contract import ParseContext, ParseResult, UnrecognisedFormat
from analysis.ingest.lines import make_rejects
from analysis.ingest.parsers import batched, steplines
from analysis.ingest.parsers.csvlines import parse_time_any
from analysis.ingest.parts import combine
from analysis.ingest.timeutil import local_to_utc

COLUMNS = {"job_id": pl.Utf8, "log_time": pl.Datetime("us"), "host": pl.Utf8, "task": pl.Int64, "rank": pl.Int64,
           "local_rank": pl.Int64, "kind": pl.Utf8, "code": pl.Utf8, "peer": pl.Utf8, "seq": pl.Int64, "enqueued": pl.Int64,
           "timeout_ms": pl.Int64, "message": pl.Utf8, "step": pl.Int64, "step_seconds": pl.Float64,
           "line_no": pl.Int64}
INT32 = ("task", "rank", "local_rank")
# job id from the file name (the first that matches), then from the folder
_NAME_PATTERNS = [r"^slurm-(\d+(?:_\d+)?)\.", r"^(\d+(?:_\d+)?)\.(?:out|err|log|txt)",
                  r"[-_.](\d+(?:_\d+)?)\.(?:out|err|log|txt)(?:\.gz)?$"]
_FOLDER = re.compile(r"^(?:slurm-|job-?)?(\d+(?:_\d+)?)$")

# torchrun's ChildFailedError entry lines, as torch.distributed.elastic's template spaces them
ELASTIC_FIELDS = ["time      : ", "host      : ", "rank      : ", "exitcode  : "]
ELASTIC_HEADERS = {"Failures:": "failures", "Root Cause (first observed failure):": "root"}
ELASTIC_FIELD = r"^\s*(time|host|rank|exitcode)\s+: \S"
MAX_TASK_SPAN = 4096  # tasks an srun error line may name on one host
# a line worth a closer look holds one of these (literal, case-sensitive)
TOKENS = ["NCCL", "Watchdog", "watchdog", "peer", "remote process exited", "nranks", "global_rank_mapping",
          "srun: error", "slurmstepd", "CUDA", "CUBLAS_STATUS", "CUDNN_STATUS", "ECC", "iteration", "Error", "Exception", "Interrupt", "Exit",
          "Failure", *ELASTIC_FIELDS, "Root Cause (first observed failure)", *steplines.SCREEN]
# the prefixes launchers stack, outermost first, each optional: srun --label, pdsh/DeepSpeed host
# (must hold a digit: "ValueError: " is not a host), torchrun's [defaultN]:, PyTorch's [rankN]:
# (matched as one short prefix, then its parts read from it: a capture over the whole line costs 4x)
# (PyTorch >= 2.3 writes "[rank3]: Traceback ...": the space after the prefix is part of it)
PREFIXES = (r"^(?:\s*\d+: )?(?:[A-Za-z0-9][A-Za-z0-9.-]*\d[A-Za-z0-9.-]*: )?(?:\[default\d+\]:)?\s*(?:\[rank\d+\]: ?)?")
PREFIX_PARTS = (r"^(?:\s*(?P<label>\d+): )?(?:(?P<phost>[A-Za-z0-9][A-Za-z0-9.-]*\d[A-Za-z0-9.-]*): )?"
                r"(?:\[default(?P<plocal>\d+)\]:)?\s*(?:\[rank(?P<prank>\d+)\]: ?)?$")
# NCCL's prefix, after what may come before it: a container runtime's ISO stamp (kubectl logs --timestamps), then
# NCCL's own "[%F %T] " (NCCL_DEBUG_TIMESTAMP_FORMAT; on WARN lines by default in recent NCCL) or a launcher's
# "[155] " label; "(function)" after file.cc:line in the newest NCCL; some builds print the host without :pid:tid
NCCL = (r"^(?:\d{4}-\d\d-\d\dT\S+ )?(?:\[[^\]]*\] )?"
        r"(?P<nhost>[^\s:\[]+)(?::(?P<pid>\d+):(?P<tid>\d+))? \[(?P<dev>\d+)\] (?:[\w./-]+:\d+ )?(?:\(\w+\) )?"
        r"NCCL (?P<level>INFO|WARN|TRACE|ABORT) ?(?P<nmsg>.*)$")
TIME_BRACKET = r"^\[(\d{4}-\d\d-\d\d[ T]\d\d:\d\d:\d\d)(?:[.,](\d+))?\]"
TIME_BRACKET_TEXT = r"^\[(\d{4}-\d\d-\d\d[ T]\d\d:\d\d:\d\d(?:[.,]\d+)?)\]"
TIME_ISO = r"^(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d+)?(?:Z|[+-]\d\d:?\d\d)?)\s"
# (PyTorch's c10 logger does not pad the month: E318 is March 18, E1206 December 6)
TIME_GLOG = r"^\[?[EWIF](\d{1,2})(\d\d) (\d\d:\d\d:\d\d(?:\.\d+)?)"
NCCL_ERRORS = ["ncclRemoteError", "ncclSystemError", "ncclInternalError", "ncclUnhandledCudaError", "ncclInvalidUsage"]
# ncclGetErrorString(ncclRemoteError): how PyTorch and others report it without naming the code
REMOTE_ERROR = "remote process exited or there was a network error"
# a "Connection reset by peer" line naming one of these is a collective library's (socketProgress: NCCL's socket
# code, which PyTorch repeats under "Last error:" without naming NCCL)
COLLECTIVES = ["NCCL", "nccl", "c10d", "TCPStore", "ProcessGroup", "gloo", "Gloo", "torch.distributed",
               "socketProgress"]
EXCEPTION = r"^(?:[A-Za-z_][\w.]*\.)?[A-Z]\w*(?:Error|Exception|Interrupt|Exit|Failure)(?::\s.*|:?$)"
PROGRESS = r"(?:^|\] )\s*iteration\s+\d+/\s*\d+ \|"
ITERATION_MS = r"elapsed time per iteration \(ms\): "


def job_id_for(path) -> str | None:
    """The job a log file belongs to, from its name or its folder's."""
    name = path.name.removesuffix(".gz")
    for pattern in _NAME_PATTERNS:
        m = re.search(pattern, name)
        if m:
            return m.group(1)
    m = _FOLDER.match(path.parent.name)
    return m.group(1) if m else None


NO_JOB = ("cannot tell which job this log belongs to: name it slurm-<jobid>.out, slurm-<jobid>_<task>.out, "
          "<jobid>.err, or put it in a folder named by the job id (joblogs/<jobid>/...)")


def parse(lines: pl.DataFrame, ctx: ParseContext) -> ParseResult:
    return parse_stream([lines], ctx)


def parse_stream(chunks: Iterable[pl.DataFrame], ctx: ParseContext) -> ParseResult:
    result = combine(stream_parts(chunks, ctx))
    result.tables.setdefault("job_log_lines", pl.DataFrame(schema=COLUMNS))
    result.format = "job-log"
    return result


def stream_parts(chunks: Iterable[pl.DataFrame], ctx: ParseContext) -> Iterator[ParseResult]:
    """The file's (line_no, text) frames in order, one part each (a piece parsed as a batch of one file):
    only the rows kept are written. The year of the first dated line found goes on to the later pieces."""
    if job_id_for(ctx.path) is None:
        raise UnrecognisedFormat(NO_JOB)
    year, carry = None, None
    for lines in chunks:
        lines = batched.numbered(lines)
        if year is None:  # glog stamps carry no year: the year of the file's dated lines, any of them
            year = _years(lines).get(0)
        # each worker's last step line goes on to the next piece (steplines.derive)
        result, carry = _parse(lines, [ctx], {0: year} if year else {}, carry)
        yield batched.single(result)


def parse_batch(lines: pl.DataFrame, ctxs: list[ParseContext]) -> batched.BatchResult:
    """Many job logs at once (analysis.ingest.parsers.batched): one per job, thousands a day."""
    return _parse(lines, ctxs, _years(lines))[0]


def _parse(lines: pl.DataFrame, ctxs: list[ParseContext], years: dict[int, int],
           carry: steplines.Carry | None = None) -> tuple[batched.BatchResult, steplines.Carry]:
    """``years``: fid -> the year of the file's dated lines (a file without one: its mtime's); ``carry``: the
    step lines before this piece of the file (steplines.derive), returned for the next piece."""
    job_ids = [job_id_for(c.path) for c in ctxs]
    kept = _screen(lines)
    year = batched.per_file([years.get(i) or c.mtime.year for i, c in enumerate(ctxs)] if kept.height else [0], pl.Int32)
    rows, bad = _rows(kept.with_columns(_year=year), ctxs[0].options.tz)
    rows, carry = steplines.derive(rows, carry, steplines.batches(kept))
    rows = rows.with_columns(job_id=batched.per_file(job_ids, pl.Utf8, batched.fid_of(pl.col("line_no"))))
    per_file = batched.counts(batched.fid_of(lines["line_no"]))
    stored = batched.counts(batched.fid_of(rows["line_no"].unique()))
    refused = batched.counts(batched.fid_of(bad["line_no"]))
    bad = bad.join(lines, on="line_no")
    return batched.BatchResult(
        tables={"job_log_lines": rows.select([_column(c, t) for c, t in COLUMNS.items()])},
        rejects=make_rejects(bad["line_no"], bad["text"], bad["reason"].to_list()),
        skipped={fid: n - stored.get(fid, 0) - refused.get(fid, 0) for fid, n in per_file.items()},
        formats=dict.fromkeys(range(len(ctxs)), "job-log"),
        unrecognised={fid: NO_JOB for fid, job in enumerate(job_ids) if job is None}), carry


def _column(name: str, dtype) -> pl.Expr:
    """A row column as stored: task, rank and local_rank are INTEGER in the warehouse, so a number no job
    has (a garbled "[Rank 9999999999]") is NULL there rather than a failed insert."""
    col = pl.col(name).cast(dtype)
    return pl.when(col.is_between(-2**31, 2**31 - 1)).then(col).alias(name) if name in INT32 else col


def _years(lines: pl.DataFrame) -> dict[int, int]:
    """fid -> the latest year a dated line of the file names (files without one are absent)."""
    years = lines.filter(pl.col("text").str.contains("-", literal=True)).select(
        fid=batched.fid_of(pl.col("line_no")),
        year=pl.col("text").str.extract(r"(?:^|[\[\s])((?:19|20)\d\d)-[01]\d-[0-3]\d[ T_]\d\d:", 1).cast(pl.Int32))
    years = years.drop_nulls().group_by("fid").agg(pl.col("year").max())
    return dict(zip(years["fid"].to_list(), years["year"].to_list()))


def _screen(lines: pl.DataFrame) -> pl.DataFrame:
    """Lines that may matter, by literal substrings only; NCCL INFO lines other than init lines go."""
    t = pl.col("text")
    info = t.str.contains(" NCCL INFO ", literal=True) & ~t.str.contains(" nranks ", literal=True)
    return lines.filter(t.str.contains_any(TOKENS) & ~info)


def _kinds(msg: pl.Expr, level: pl.Expr) -> pl.Expr:
    """The kind of each line by literal tests, first match wins; progress? and exception? are
    candidates confirmed by their regex on their own rows."""
    has = lambda s: msg.str.contains(s, literal=True)  # noqa: E731
    rules = [
        ("watchdog_timeout", has("Watchdog caught collective operation timeout")),
        ("watchdog_position", has("last enqueued NCCL work:")),
        ("peer_error", msg.str.contains_any(["ompletion from peer", "closed by remote peer", "reset by peer "])),
        ("nccl_init", has(" nranks ") & has(" cudaDev ")),
        ("rank_map", has("global_rank_mapping=")),
        ("step_cancelled", msg.str.starts_with("slurmstepd") & has(" CANCELLED AT ")),
        ("srun_exit", msg.str.starts_with("srun: error: ") & has(": task")),
        ("nccl_error", msg.str.contains_any([*NCCL_ERRORS, "DistBackendError", "NCCL error", REMOTE_ERROR,
                                             "NCCL communicator was aborted"])),
        ("cuda_error", msg.str.contains_any(["CUDA error: ", "CUBLAS_STATUS_", "CUDNN_STATUS_",
                                             "uncorrectable ECC error"])),
        # an NCCL line (level) or one naming a collective library; a traceback's last line stays an exception
        ("connection_reset", has("reset by peer") & (level.is_not_null() | msg.str.contains_any(COLLECTIVES))
         & ~has("Error: ")),
        # before exception?: "Failures:" is no exception
        ("elastic_failure?", msg.str.contains_any(ELASTIC_FIELDS) | msg.str.strip_chars().is_in(list(ELASTIC_HEADERS))),
        ("progress?", has("iteration ")),
        # before exception?: _step_time gives the lines that are no step to exception and nccl_warn as these would
        ("step_time?", steplines.candidate(msg)),
        ("exception?", msg.str.contains_any(["Error", "Exception", "Interrupt", "Exit", "Failure"])),
        ("nccl_warn", level == "WARN"),
    ]
    kind = pl.lit(None, pl.Utf8)
    for name, test in reversed(rules):
        kind = pl.when(test).then(pl.lit(name)).otherwise(kind)
    return kind


@dataclass(frozen=True)
class _Read:
    """How one group of rows is read: the zone of naive stamps, the shape of the rows' stamp (None: the
    lines are not dated; glog's year is each row's _year: its file's)."""
    tz: str
    stamp: str | None


DATED = r"^\s*(?:\[|[EWIF]\d{4} |\d{4}-|slurmstepd)"
# The shape of a dated line's stamp, by its first characters: only its own parser (and CANCELLED AT) runs.
_REST = pl.col("rest").str.strip_chars_start()
STAMP = (pl.when(~pl.col("rest").str.contains(DATED)).then(pl.lit(None, pl.Utf8))
         .when(_REST.str.contains(r"^\d")).then(pl.lit("iso"))
         .when(_REST.str.contains(r"^\[\d")).then(pl.lit("bracket"))
         .when(_REST.str.contains(r"^\[?[EWIF]\d")).then(pl.lit("glog"))
         .otherwise(pl.lit("other")))


def _rows(kept: pl.DataFrame, tz: str) -> tuple[pl.DataFrame, pl.DataFrame]:
    """Prefixes and kind, then each (kind, stamp) group's fields in one lazy plan: a small file costs a
    few collects, not several per kind (a cluster writes thousands of job logs a day). Also the
    (line_no, reason) of lines with a number too large to store, which become rejects."""
    text = pl.col("text").str.strip_suffix("\r")
    p = pl.col("prefix").str.extract_groups(PREFIX_PARTS)
    n = pl.col("rest").str.extract_groups(NCCL)
    frame = (kept.lazy().with_columns(prefix=text.str.extract(PREFIXES, 0))
             .with_columns(label=p.struct.field("label"), phost=p.struct.field("phost"),
                           prank=p.struct.field("prank"), plocal=p.struct.field("plocal"),
                           rest=text.str.slice(pl.col("prefix").str.len_chars()))
             # an NCCL WARN line whose prefix is not NCCL's (a launcher's or a logger's before it) is still one
             .with_columns(nhost=n.struct.field("nhost"),
                           level=pl.coalesce([n.struct.field("level"), pl.when(pl.col("rest").str.contains(
                               "NCCL WARN ", literal=True)).then(pl.lit("WARN"))]),
                           msg=pl.coalesce([n.struct.field("nmsg"), pl.col("rest")]))
             .with_columns(kind=_kinds(pl.col("msg"), pl.col("level"))).filter(pl.col("kind").is_not_null())
             .with_columns(stamp=STAMP).collect())
    # (partitioned eagerly: polars 2.1 panics on some of these plans behind a lazy filter)
    groups = frame.partition_by("kind", "stamp", as_dict=True, maintain_order=True)
    out = [_FIELDS.get(kind, _plain)(part.lazy().with_columns(kind=pl.lit(kind.rstrip("?"))),
                                     _Read(tz, stamp))
           for (kind, stamp), part in groups.items()]
    if not out:
        return pl.DataFrame(schema=COLUMNS), pl.DataFrame(schema={"line_no": pl.Int64, "reason": pl.Utf8})
    return _integers(pl.concat(out, how="diagonal_relaxed").collect())


# Integer fields are extracted as digits and converted here, once: a number wider than 64 bits
# ("rank 99999999999999999999") makes its line a reject instead of failing the file.
INTEGERS = ("task", "rank", "local_rank", "seq", "enqueued", "timeout_ms", "step")


def _integers(rows: pl.DataFrame) -> tuple[pl.DataFrame, pl.DataFrame]:
    cast = {c: pl.col(c).cast(pl.Utf8).cast(pl.Int64, strict=False) for c in INTEGERS}
    too_big = [pl.when(pl.col(c).is_not_null() & cast[c].is_null())
               .then(pl.format("{} {}", pl.lit(c), pl.col(c).cast(pl.Utf8).str.slice(0, 40))) for c in INTEGERS]
    rows = rows.with_columns(bad=pl.concat_str(too_big, separator=", ", ignore_nulls=True), **cast)
    bad = (rows.filter(pl.col("bad") != "").group_by("line_no", maintain_order=True).agg(pl.col("bad").first())
           .select("line_no", pl.format("number too large for a 64-bit integer: {}", pl.col("bad")).alias("reason")))
    rows = rows.filter(~pl.col("line_no").is_in(bad["line_no"].implode())).drop("bad")
    return rows.sort("line_no", "rank", "task", nulls_last=True), bad


def _times(rest: pl.Expr, year: pl.Expr, tz: str, stamp: str) -> pl.Expr:
    """A line's own time, each shape read with its fixed format: [YYYY-MM-DD hh:mm:ss(,ms)], ISO with a
    zone, glog's E1206 18:44:12.715 (``year`` given), slurmstepd's CANCELLED AT. ``stamp`` (STAMP) says
    which shape the rows start with: the others cannot match them, so they are not run."""
    fixed = lambda text, fmt: text.str.to_datetime(fmt, strict=False, time_unit="us")  # noqa: E731
    cancelled = fixed(rest.str.extract(r"CANCELLED AT (\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d)", 1), "%Y-%m-%dT%H:%M:%S")
    if stamp == "iso":
        return pl.coalesce([parse_time_any(rest.str.extract(TIME_ISO, 1), tz), local_to_utc(cancelled, tz)])
    if stamp == "bracket":
        text = rest.str.extract(TIME_BRACKET_TEXT, 1).str.replace(",", ".", literal=True).str.replace(" ", "T")
        return local_to_utc(pl.coalesce([fixed(text, "%Y-%m-%dT%H:%M:%S%.f"), cancelled]), tz)
    if stamp == "glog":
        glog = rest.str.extract_groups(TIME_GLOG)
        text = pl.format("{}-{}-{}T{}", year, glog.struct.field("1").str.zfill(2), glog.struct.field("2"),
                         glog.struct.field("3"))
        return local_to_utc(pl.coalesce([fixed(text, "%Y-%m-%dT%H:%M:%S%.f"), cancelled]), tz)
    return local_to_utc(cancelled, tz)


# the rank a line names: "[Rank N]" / "[PG 0 Rank N]" in its message, else PyTorch's [rankN]: prefix, else srun's label
_RANK = pl.coalesce([pl.col("msg").str.extract(r"\[(?:PG [^\]]*?)?Rank (\d+)\]", 1), pl.col("prank"), pl.col("label")])


def _base(part: pl.LazyFrame, r: _Read, **fields: pl.Expr) -> pl.LazyFrame:
    """The columns every kind has; ``fields`` add or override the kind's own."""
    m = pl.col("msg")
    # NCCL's own lines carry no time: most rows of a big log never go through the time parsers
    cols = {"log_time": _times(pl.col("rest").str.strip_chars_start(), pl.col("_year"), r.tz, r.stamp) if r.stamp
            else pl.lit(None, pl.Datetime("us")),
            "host": pl.coalesce([pl.col("nhost"), pl.col("phost")]), "task": pl.col("label"),
            "rank": _RANK,
            "local_rank": pl.col("plocal"),
            "code": pl.lit(None, pl.Utf8), "peer": pl.lit(None, pl.Utf8), "seq": pl.lit(None, pl.Utf8),
            "enqueued": pl.lit(None, pl.Utf8), "timeout_ms": pl.lit(None, pl.Utf8), "message": m.str.slice(0, 2000),
            "step": pl.lit(None, pl.Utf8), "step_seconds": pl.lit(None, pl.Float64)}
    cols.update(fields)
    return part.with_columns(**cols).select("kind", "line_no", *cols)


def _plain(part, r):
    return _base(part, r)


def _watchdog_timeout(part, r):
    t = pl.col("msg").str.extract_groups(r"SeqNum=(\d+), OpType=(\w+).*?Timeout\(ms\)=(\d+)\)")
    return _base(part, r, code=t.struct.field("2"), seq=t.struct.field("1"), timeout_ms=t.struct.field("3"))


def _watchdog_position(part, r):
    w = pl.col("msg").str.extract_groups(r"work: (-?\d+), last enqueued NCCL work: (-?\d+)")
    return _base(part, r, seq=w.struct.field("1"), enqueued=w.struct.field("2"))


def _peer_error(part, r):
    m = pl.col("msg")
    return _base(part, r, code=m.str.extract(r"with (?:error |status=)(\d+)", 1),
                 peer=m.str.extract(r"(?i)(?:from|remote|by) peer ([^\s<]+)<\d+>", 1))


def _nccl_init(part, r):
    m = pl.col("msg")
    return _base(part, r, rank=m.str.extract(r"\brank (\d+) nranks", 1),
                 code=m.str.extract(r"nranks (\d+)", 1))


def _step_cancelled(part, r):
    c = pl.col("msg").str.extract_groups(r"\*\*\* (?:JOB|STEP) \S+ ON (\S+) CANCELLED AT \S+(?: DUE TO ([A-Z ]*[A-Z]))?")
    return _base(part, r, host=c.struct.field("1"), code=c.struct.field("2").fill_null("CANCELLED"))


def _srun_exit(part, r):
    """``srun: error: gpu7: tasks 0-3,8: Exited with exit code 1`` (or Killed, Terminated, Aborted (core
    dumped), ...): one row per task, so the step's task -> host map can be read from the rows."""
    s = pl.col("msg").str.extract_groups(r"^srun: error: (\S+): tasks? ([\d,\-]+): (.*)$")
    what = s.struct.field("3")
    rows = _base(part, r, host=s.struct.field("1"), task=s.struct.field("2").str.split(","),
                 code=what.str.extract(r"exit code (\d+)", 1).fill_null(what.str.slice(0, 40))).explode("task")
    lo = pl.col("task").str.extract(r"^(\d+)", 1).cast(pl.Int64, strict=False)
    hi = pl.coalesce([pl.col("task").str.extract(r"-(\d+)$", 1).cast(pl.Int64, strict=False), lo])
    # a span no step has (a garbled line) stays one row without a task rather than millions
    span = pl.when((hi >= lo) & (hi - lo < MAX_TASK_SPAN)).then(pl.int_ranges(lo, hi + 1))
    return rows.with_columns(task=span).explode("task")


def _nccl_error(part, r):
    code = pl.col("msg").str.extract("(" + "|".join(NCCL_ERRORS) + ")", 1).fill_null("nccl_error")
    return _base(part, r, code=code)


def _cuda_error(part, r):
    m = pl.col("msg")
    return _base(part, r, code=pl.coalesce([m.str.extract(r"(CUBLAS_STATUS_\w+|CUDNN_STATUS_\w+)", 1),
                                                    m.str.extract(r"CUDA error: ([^.\n]{1,80})", 1),
                                                    pl.lit("uncorrectable ECC error")]))


def _progress(part, r):
    """Megatron's iteration lines: many (one per step), so the time is read with one fixed format."""
    part = part.filter(pl.col("msg").str.contains(PROGRESS))
    stamp = pl.col("rest").str.strip_chars_start().str.extract(TIME_BRACKET, 1)
    t = local_to_utc(stamp.str.to_datetime("%Y-%m-%d %H:%M:%S", strict=False, time_unit="us"), r.tz)
    iteration = pl.col("msg").str.extract(r"iteration\s+(\d+)", 1)
    return _base(part, r, log_time=t, code=iteration, message=pl.col("msg").str.slice(0, 200),
                 step=iteration, step_seconds=steplines.ms_to_seconds(pl.col("msg"), ITERATION_MS))


def _step_time(part, r):
    """A training step's line (steplines.py): its shape, step and seconds; its time, when not at its start
    (torchtitan's "[titan] <time>", a log line after a tqdm bar), from anywhere in it. The candidates that
    are a traceback's last line are exceptions, the NCCL WARN lines nccl_warn; the others are skipped."""
    f = steplines.fields(pl.col("msg"), r.tz)
    part = part.with_columns(_step=f.pop("step"), _time=f.pop("any_time"), _exc=pl.col("msg").str.contains(EXCEPTION))
    steps = part.filter(~pl.col("_exc") & pl.col("_step").is_not_null())
    own = _times(pl.col("rest").str.strip_chars_start(), pl.col("_year"), r.tz, r.stamp) if r.stamp else None
    log_time = pl.col("_time") if own is None else pl.coalesce([own, pl.col("_time")])
    # a tqdm bar's rank is its prefix's: a "[Rank N]" in it belongs to a log line written after the bar
    rank = (pl.when(f["code"].str.starts_with("tqdm/")).then(pl.coalesce([pl.col("prank"), pl.col("label")]))
            .otherwise(_RANK))
    warn = part.filter(~pl.col("_exc") & pl.col("_step").is_null() & (pl.col("level") == "WARN"))
    return pl.concat([_base(steps, r, log_time=log_time, step=pl.col("_step"), rank=rank, **f),
                      _exception(part.filter(pl.col("_exc")).with_columns(kind=pl.lit("exception")), r),
                      _plain(warn.with_columns(kind=pl.lit("nccl_warn")), r)], how="diagonal_relaxed")


def _exception(part, r):
    part = part.filter(pl.col("msg").str.contains(EXCEPTION))
    code = pl.col("msg").str.extract(r"([A-Z]\w*(?:Error|Exception|Interrupt|Exit|Failure))", 1)
    return _base(part, r, code=code)


def _elastic_failure(part, r):
    """One line of torchrun's ChildFailedError block; its time is the agent host's local time
    (``2024-03-05_14:22:31``)."""
    m = pl.col("msg")
    field = m.str.extract(ELASTIC_FIELD, 1)
    part = part.filter(field.is_not_null() | m.str.strip_chars().is_in(list(ELASTIC_HEADERS)))
    stamp = m.str.extract(r"^\s*time\s+: (\d{4}-\d\d-\d\d_\d\d:\d\d:\d\d)", 1)
    return _base(part, r, code=pl.coalesce([field, m.str.strip_chars().replace_strict(ELASTIC_HEADERS, default=None)]),
                 log_time=local_to_utc(stamp.str.to_datetime("%Y-%m-%d_%H:%M:%S", strict=False, time_unit="us"), r.tz),
                 host=m.str.extract(r"^\s*host\s+: (\S+)", 1),
                 rank=m.str.extract(r"^\s*rank\s+: (\d+)", 1).cast(pl.Int64, strict=False),
                 local_rank=m.str.extract(r"^\s*rank\s+: \d+ \(local_rank: (\d+)\)", 1).cast(pl.Int64, strict=False))


def _rank_map(part, r):
    """DeepSpeed's ``global_rank_mapping=defaultdict(<class 'list'>, {'h1': [0, 1], 'h2': [2, 3]})``: one row per rank."""
    base = _base(part, r)
    pairs = pl.col("message").str.extract_all(r"'[^']+': \[[\d, ]*\]")
    rows = base.with_columns(pair=pairs).explode("pair").filter(pl.col("pair").is_not_null())
    rows = rows.with_columns(host=pl.col("pair").str.extract(r"'([^']+)'", 1),
                             rank=pl.col("pair").str.extract(r"\[([\d, ]*)\]", 1).str.split(", "))
    return rows.explode("rank").filter(pl.col("rank") != "").drop("pair")


_FIELDS = {"watchdog_timeout": _watchdog_timeout, "watchdog_position": _watchdog_position,
           "peer_error": _peer_error, "nccl_init": _nccl_init, "step_cancelled": _step_cancelled,
           "srun_exit": _srun_exit, "nccl_error": _nccl_error, "cuda_error": _cuda_error,
           "progress?": _progress, "step_time?": _step_time, "exception?": _exception, "rank_map": _rank_map,
           "elastic_failure?": _elastic_failure}
