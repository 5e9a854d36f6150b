"""Job stdout/stderr -> ``job_log_lines``: the lines of a job's own output that
say why it stopped, as NCCL, PyTorch, CUDA, Python and Slurm print them.

The job is named by the file: ``slurm-<jobid>.out``, ``slurm-<jobid>_<task>.out``
(array task), ``<name>-<jobid>.out``, ``<jobid>.err``/``.log``, or any file in a
folder named by the job id (``joblogs/<jobid>/rank3.log``). A file that names no
job is unrecognised.

Prefixes are peeled off first, in the order launchers stack them: ``srun
--label`` (``12: ``), pdsh/DeepSpeed (``vm-07-05: ``; a host prefix must hold a
digit, so ``ValueError: ...`` is not one), torchrun (``[default3]:``), PyTorch's
``[rank3]:``, then NCCL's ``host:pid:tid [cudaDev]`` (with the optional
``file.cc:123`` of NCCL >= 2.19). What is left is classified:

  watchdog_timeout  [Rank 3] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=..., OpType=..., ..., Timeout(ms)=...) ran for ... milliseconds
  watchdog_position [PG 0 Rank 3] Timeout at NCCL work: N, last enqueued NCCL work: M, last completed NCCL work: K
                    (also "Exception (either an error or timeout) detected by watchdog at work: ...")
  peer_error        NET/IB : Got completion from peer <ip><port> with error|status=N ... (a transport error naming a peer)
  nccl_error        ncclRemoteError / ncclSystemError / ncclInternalError / NCCL error / DistBackendError / communicator aborted
  cuda_error        CUDA error: ..., CUBLAS_STATUS_*, uncorrectable ECC error
  exception         the last line of a Python traceback (``ValueError: ...``)
  srun_exit         srun: error: <host>: task(s) <ids>: Exited with exit code N | Killed | ...
  step_cancelled    slurmstepd: error: *** JOB|STEP <id> ON <host> CANCELLED AT <time> [DUE TO ...] ***
  nccl_init         NCCL INFO ... rank R nranks N cudaDev D ... (rank -> host, with the NCCL prefix)
  rank_map          DeepSpeed's global_rank_mapping={'host': [0, 1, ...], ...}: one row per rank
  progress          Megatron's " iteration   N/   M |" lines (time of the last progress, C4 detection)
  nccl_warn         any other NCCL WARN line (mostly harmless: kept, classified info)

Every other line is skipped on purpose (counted): a job log is mostly the
program's own chatter. Times: a leading ``[YYYY-MM-DD hh:mm:ss,ms]`` or ISO
stamp, PyTorch/glog ``E1125 09:40:16.123`` (no year: taken from the file's
modification time) and slurmstepd's ``CANCELLED AT``; naive stamps are in
ctx.options.tz. Lines without one get their time from the file's neighbours
when the events are built (analysis/joblogs.py).
"""
from __future__ import annotations

import re

import polars as pl

from analysis.model import ParseContext, ParseResult, UnrecognisedFormat
from analysis.parsers.csvlines import parse_time_any

COLUMNS = {"job_id": pl.Utf8, "log_time": pl.Datetime("us"), "host": pl.Utf8, "task": pl.Int64, "rank": pl.Int64,
           "kind": pl.Utf8, "code": pl.Utf8, "peer": pl.Utf8, "seq": pl.Int64, "enqueued": pl.Int64,
           "timeout_ms": pl.Int64, "message": pl.Utf8, "line_no": pl.Int64}
# job id from the file name (the first that matches), then from the folder
_NAME_PATTERNS = [r"^slurm-(\d+(?:_\d+)?)\.", r"^(\d+(?:_\d+)?)\.(?:out|err|log|txt)",
                  r"[-_.](\d+(?:_\d+)?)\.(?:out|err|log|txt)(?:\.gz)?$"]
_FOLDER = re.compile(r"^(?:slurm-|job-?)?(\d+(?:_\d+)?)$")

# prefixes, outermost first; each is optional
LABEL = r"^\s*(?P<task>\d+): "
HOST_PREFIX = r"^(?P<phost>[A-Za-z0-9][A-Za-z0-9.-]*\d[A-Za-z0-9.-]*): "
TORCHRUN = r"^\[default(?P<lrank>\d+)\]:"
RANK_PREFIX = r"^\[rank(?P<prank>\d+)\]:"
NCCL = (r"^(?P<nhost>[^\s:]+):(?P<pid>\d+):(?P<tid>\d+) \[(?P<dev>\d+)\] (?:[\w./-]+:\d+ )?"
        r"NCCL (?P<level>INFO|WARN|TRACE|ABORT) ?(?P<nmsg>.*)$")

TIME_BRACKET = r"^\[(\d{4}-\d\d-\d\d[ T]\d\d:\d\d:\d\d)(?:[.,](\d+))?\]"
TIME_ISO = r"^(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d+)?(?:Z|[+-]\d\d:?\d\d)?)\s"
TIME_GLOG = r"^\[?[EWIF](\d\d)(\d\d) (\d\d:\d\d:\d\d(?:\.\d+)?)"

# (kind, pattern over the message left after the prefixes); the first that matches wins
KINDS: list[tuple[str, str]] = [
    ("watchdog_timeout", r"Watchdog caught collective operation timeout"),
    ("watchdog_position", r"(?:Timeout at NCCL work|detected by watchdog at work): -?\d+, last enqueued NCCL work: -?\d+"),
    ("peer_error", r"(?i)got completion from peer|closed by remote peer|connection (?:reset|closed) by peer [\w.:%\[\]-]+<\d+>"),
    ("nccl_init", r"\brank \d+ nranks \d+ cudaDev \d+"),
    ("rank_map", r"global_rank_mapping=.*\{"),
    ("step_cancelled", r"^slurmstepd(?:-\S+)?: error: \*\*\* (?:JOB|STEP) \S+ ON \S+ CANCELLED AT"),
    ("srun_exit", r"^srun: error: \S+: tasks? [\d,\-]+: "),
    ("nccl_error", r"\bncclRemoteError\b|\bncclSystemError\b|\bncclInternalError\b|\bncclUnhandledCudaError\b|"
                   r"\bncclInvalidUsage\b|DistBackendError|NCCL error|NCCL communicator was aborted"),
    ("cuda_error", r"CUDA error: |CUBLAS_STATUS_\w+|CUDNN_STATUS_\w+|uncorrectable ECC error"),
    ("progress", r"(?:^|\] )\s*iteration\s+\d+/\s*\d+ \|"),
    ("exception", r"^(?:[A-Za-z_][\w.]*\.)?[A-Z]\w*(?:Error|Exception|Interrupt|Exit|Failure)(?::\s.*|:?$)"),
]
NCCL_ERROR_CODE = r"\b(ncclRemoteError|ncclSystemError|ncclInternalError|ncclUnhandledCudaError|ncclInvalidUsage)\b"


def job_id_for(path) -> str | None:
    """The job a log file belongs to, from its name or its folder's."""
    name = path.name.removesuffix(".gz")
    for pattern in _NAME_PATTERNS:
        m = re.search(pattern, name)
        if m:
            return m.group(1)
    m = _FOLDER.match(path.parent.name)
    return m.group(1) if m else None


def _empty() -> pl.DataFrame:
    return pl.DataFrame(schema=COLUMNS)


def _year(rest: pl.Series, fallback: int) -> int:
    """glog stamps carry no year: the year of the file's dated lines, else of its modification time."""
    years = rest.str.extract(r"^\[?(\d{4})-\d\d-\d\d[ T]\d\d:", 1).drop_nulls()
    return int(years.max()) if years.len() else fallback


def _times(rest: pl.Expr, year: int, tz: str) -> pl.Expr:
    bracket = rest.str.extract_groups(TIME_BRACKET)
    stamp = pl.concat_str([bracket.struct.field("1"), pl.lit("."), bracket.struct.field("2").fill_null("0")])
    glog = rest.str.extract_groups(TIME_GLOG)
    glog_text = pl.format("{}-{}-{}T{}", pl.lit(str(year)), glog.struct.field("1"), glog.struct.field("2"),
                          glog.struct.field("3"))
    cancelled = rest.str.extract(r"CANCELLED AT (\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d)")
    text = pl.coalesce([pl.when(bracket.struct.field("1").is_not_null()).then(stamp),
                        rest.str.extract(TIME_ISO), pl.when(glog.struct.field("1").is_not_null()).then(glog_text),
                        cancelled])
    return parse_time_any(text, tz)


def parse(lines: pl.DataFrame, ctx: ParseContext) -> ParseResult:
    job_id = job_id_for(ctx.path)
    if job_id is None:
        raise UnrecognisedFormat(
            "cannot tell which job this log belongs to: name it slurm-<jobid>.out, slurm-<jobid>_<task>.out, "
            "<jobid>.err, or put it in a folder named by the job id (joblogs/<jobid>/...)")
    body = lines.filter(pl.col("text").str.contains(
        r"NCCL|Watchdog|watchdog|peer|rank|srun|slurmstepd|CUDA|CUBLAS|CUDNN|ECC|iteration|Error|Exception|"
        r"Interrupt|Exit|Failure"))
    parsed = _classify(body, ctx)
    kept = parsed.filter(pl.col("kind").is_not_null())
    rank_rows = _rank_map_rows(kept.filter(pl.col("kind") == "rank_map"))
    rows = pl.concat([kept.filter(pl.col("kind") != "rank_map").with_columns(job_id=pl.lit(job_id)).select(
        [pl.col(c).cast(t) for c, t in COLUMNS.items()]), rank_rows], how="vertical_relaxed")
    rows = rows.with_columns(job_id=pl.lit(job_id)).select(list(COLUMNS)).sort("line_no", "rank", nulls_last=True)
    # a line that is in no table is skipped on purpose (the program's own output)
    stored = rows["line_no"].n_unique() if rows.height else 0
    return ParseResult(tables={"job_log_lines": rows}, skipped=lines.height - stored, format="job-log")


def _classify(body: pl.DataFrame, ctx: ParseContext) -> pl.DataFrame:
    text = pl.col("text").str.strip_suffix("\r")
    frame = body.with_columns(rest=text).with_columns(label=pl.col("rest").str.extract(LABEL, 1).cast(pl.Int64))
    frame = frame.with_columns(rest=pl.col("rest").str.replace(LABEL, ""))
    frame = frame.with_columns(phost=pl.col("rest").str.extract(HOST_PREFIX, 1))
    frame = frame.with_columns(rest=pl.col("rest").str.replace(HOST_PREFIX, ""))
    frame = frame.with_columns(rest=pl.col("rest").str.replace(TORCHRUN, "").str.strip_chars_start())
    frame = frame.with_columns(prank=pl.col("rest").str.extract(RANK_PREFIX, 1).cast(pl.Int64),
                               rest=pl.col("rest").str.replace(RANK_PREFIX, ""))
    year = _year(frame["rest"], ctx.mtime.year)
    nccl = pl.col("rest").str.extract_groups(NCCL)
    frame = frame.with_columns(nhost=nccl.struct.field("nhost"), level=nccl.struct.field("level"),
                               msg=pl.coalesce([nccl.struct.field("nmsg"), pl.col("rest")]))
    kind = pl.lit(None, pl.Utf8)
    for name, pattern in reversed(KINDS):
        kind = pl.when(pl.col("msg").str.contains(pattern)).then(pl.lit(name)).otherwise(kind)
    kind = pl.when(kind.is_null() & (pl.col("level") == "WARN")).then(pl.lit("nccl_warn")).otherwise(kind)
    frame = frame.with_columns(kind=kind)
    m = pl.col("msg")
    timeout = m.str.extract_groups(r"SeqNum=(\d+), OpType=(\w+).*?Timeout\(ms\)=(\d+)\)")
    position = m.str.extract_groups(r"work: (-?\d+), last enqueued NCCL work: (-?\d+)")
    srun = m.str.extract_groups(r"^srun: error: (\S+): tasks? ([\d,\-]+): (.*)$")
    cancelled = m.str.extract_groups(r"\*\*\* (?:JOB|STEP) \S+ ON (\S+) CANCELLED AT \S+(?: DUE TO ([A-Z ]+?))?(?: \*\*\*|$)")
    k = pl.col("kind")
    rank = pl.coalesce([m.str.extract(r"\[(?:PG [^\]]*?)?Rank (\d+)\]", 1).cast(pl.Int64),
                        pl.when(k == "nccl_init").then(m.str.extract(r"\brank (\d+) nranks", 1).cast(pl.Int64)),
                        pl.col("prank"), pl.col("label")])
    peer = pl.coalesce([m.str.extract(r"(?i)from peer ([^\s<]+)<\d+>", 1),
                        m.str.extract(r"(?i)remote peer ([^\s<]+)<\d+>", 1),
                        m.str.extract(r"(?i)by peer ([^\s<]+)<\d+>", 1)])
    code = (pl.when(k == "watchdog_timeout").then(timeout.struct.field("2"))
            .when(k == "peer_error").then(m.str.extract(r"with (?:error |status=)(\d+)", 1))
            .when(k == "nccl_error").then(pl.coalesce([m.str.extract(NCCL_ERROR_CODE, 1), pl.lit("nccl_error")]))
            .when(k == "cuda_error").then(pl.coalesce([m.str.extract(r"(CUBLAS_STATUS_\w+|CUDNN_STATUS_\w+)", 1),
                                                       m.str.extract(r"CUDA error: ([^.\n]{1,80})", 1),
                                                       pl.lit("uncorrectable ECC error")]))
            .when(k == "exception").then(m.str.extract(r"([A-Z]\w*(?:Error|Exception|Interrupt|Exit|Failure))", 1))
            .when(k == "srun_exit").then(srun.struct.field("3").str.extract(r"exit code (\d+)", 1)
                                         .fill_null(srun.struct.field("3").str.slice(0, 40)))
            .when(k == "step_cancelled").then(cancelled.struct.field("2").fill_null("CANCELLED"))
            .when(k == "nccl_init").then(m.str.extract(r"nranks (\d+)", 1))
            .when(k == "progress").then(m.str.extract(r"iteration\s+(\d+)", 1)))
    host = pl.coalesce([pl.when(k == "srun_exit").then(srun.struct.field("1")),
                        pl.when(k == "step_cancelled").then(cancelled.struct.field("1")),
                        pl.col("nhost"), pl.col("phost")])
    seq = pl.coalesce([timeout.struct.field("1"), position.struct.field("1")]).cast(pl.Int64)
    frame = frame.with_columns(
        log_time=_times(pl.col("rest"), year, ctx.options.tz), host=host, task=pl.col("label"), rank=rank,
        code=code, peer=peer, seq=seq, enqueued=position.struct.field("2").cast(pl.Int64),
        timeout_ms=timeout.struct.field("3").cast(pl.Int64),
        message=pl.col("msg").str.slice(0, 2000))
    return frame


def _rank_map_rows(frame: pl.DataFrame) -> pl.DataFrame:
    """DeepSpeed's ``global_rank_mapping=defaultdict(<class 'list'>, {'h1': [0, 1], 'h2': [2, 3]})``."""
    out = []
    for row in frame.iter_rows(named=True):  # one line per node at job start: a handful per file
        for host, ranks in re.findall(r"'([^']+)': \[([\d, ]*)\]", row["msg"] or ""):
            for r in ranks.replace(" ", "").split(","):
                if r:
                    out.append({**{c: row.get(c) for c in COLUMNS}, "host": host, "rank": int(r), "code": None})
    return pl.DataFrame(out, schema=COLUMNS) if out else _empty()
