"""Training-step lines of a job log (``job_log_lines`` kind ``step_time``): the step a worker reports, how
long its steps take and when, for the straggler analysis (issue 32). Used by ``joblogs.py``, whose
prefixes (srun ``--label``, pdsh host, torchrun ``[defaultN]:``, PyTorch ``[rankN]:``) name the worker.

One line is one row: when a line holds several shapes (a tqdm bar a log line was written after), the
first of this list wins. ``code`` names the shape:

  torchtitan            ``[titan] 2025-01-01 12:00:00,123 - root - INFO - step: 10  loss: 7.1234  ...  tps: 6,789``
                        (ANSI colours removed): ``step_time: X`` / ``elapsed_time_per_step: Xs`` when printed
                        (forks); else the tokens a rank's step holds (local batch size x sequence length x
                        gradient accumulation steps, from the file's last "Trainer is initialized with ..." /
                        "Training starts at step N, with local batch size ..." line: :func:`batches`) over tps,
                        the rank's tokens per second since its previous line; else derived (below)
  deepspeed             ``[Rank 0] step=100, skipped=0, lr=[...], mom=[...]``: derived
  deepspeed_throughput  ThroughputTimer's ``epoch=0/micro_step=100/global_step=100, RunningAvgSamplesPerSec=...,
                        CurrSamplesPerSec=...``: derived (samples/s need the global batch size, not on the line)
  nanogpt               ``iter 1631: loss 4.0863, time 561.94ms``
  tqdm/<total>          a tqdm bar (Hugging Face Trainer, Lightning, accelerate scripts): ``100/1000 [01:40<15:00,
                        1.00s/it]`` or ``it/s`` (1 / rate); the bar's last update in the line (tqdm rewrites
                        itself with CRs, so a log file holds many updates on one line); the rate is tqdm's
                        smoothed one. The total tells the training bar from evaluation bars.

Megatron's ``iteration N/ M | ... | elapsed time per iteration (ms): X |`` lines stay kind ``progress`` (the C4
detection reads them) with ``step`` and ``step_seconds`` filled (joblogs._progress).

Derived seconds: the time between a worker's consecutive lines of one shape in one file, divided by the
steps between them (so a line printed every 10 steps gives the mean of those 10, eval and checkpoint time
included); none for the worker's first line, a line without a time, or a step not above the previous one
(a restart appended to the same file). A worker is the line's (host, task, rank, local_rank) as its prefixes
and message say. A file read in pieces carries each worker's last line and the batch to the next piece
(:class:`Carry`). Divisions are column by column (:func:`ms_to_seconds` says why).
"""
from __future__ import annotations

from dataclasses import dataclass

import polars as pl

from analysis.ingest.parsers import batched
from analysis.ingest.timeutil import local_to_utc

# literal screen (joblogs.TOKENS): a step line holds one of these
TOKENS = ["step:", "step=", "s/it", "it/s", "iter "]
SCREEN = [*TOKENS, "local batch size"]  # and torchtitan's batch (batches)
ANSI = r"\x1b\[[0-9;]*[A-Za-z]"
TITAN = r"(?:^|\s)step:\s*(\d+),?\s+loss:"
TITAN_SECONDS = r"(?:step_time|elapsed_time_per_step):\s*(\d+(?:\.\d+)?)"
DEEPSPEED = r"\bstep=(\d+), skipped=\d+"
THROUGHPUT = r"global_step=(\d+), RunningAvgSamplesPerSec="
NANOGPT = r"\biter (\d+): loss [^,]*, time \d+(?:\.\d+)?ms"
NANOGPT_MS = r"\biter \d+: loss [^,]*, time "
TQDM = r"(\d+)/(\d+) \[[^\]<\r]*<[^\],\r]*,\s*(\d+(?:\.\d+)?)(s/it|it/s)"
# a time anywhere in the line: torchtitan's "[titan] 2025-01-01 12:00:00,123", a log line after a tqdm bar
ANY_TIME = r"(\d{4}-\d\d-\d\d[ T]\d\d:\d\d:\d\d(?:[.,]\d+)?)"
DERIVED = ["torchtitan", "deepspeed", "deepspeed_throughput"]
WORKER = ["host", "task", "rank", "local_rank"]


def candidate(msg: pl.Expr) -> pl.Expr:
    """Lines that may report a step: one literal pass over the lines kept (a test per shape here costs a
    job log's parse 10%); :func:`fields` confirms them on their own rows."""
    return msg.str.contains_any(TOKENS)


def fields(msg: pl.Expr, tz: str) -> dict[str, pl.Expr]:
    """code, step (digits), step_seconds (given ones only), message and the time anywhere in the line, for the
    candidate rows; step is NULL where no shape matches (the row is dropped)."""
    clean = msg.str.replace_all(ANSI, "")
    titan = pl.when(~clean.str.contains("validate step:", literal=True)).then(clean.str.extract(TITAN, 1))
    ds = clean.str.extract(DEEPSPEED, 1)
    tput = clean.str.extract(THROUGHPUT, 1)
    nano = clean.str.extract(NANOGPT, 1)
    bar = clean.str.extract_all(TQDM).list.last().str.extract_groups(TQDM)
    rate = bar.struct.field("3").cast(pl.Float64, strict=False)
    bar_seconds = pl.when(bar.struct.field("4") == "s/it").then(rate).when(rate > 0).then(1.0 / rate)
    shapes = [  # first wins
        ("deepspeed", ds, pl.lit(None, pl.Float64)),
        ("deepspeed_throughput", tput, pl.lit(None, pl.Float64)),
        ("torchtitan", titan, clean.str.extract(TITAN_SECONDS, 1).cast(pl.Float64, strict=False)),
        ("nanogpt", nano, ms_to_seconds(clean, NANOGPT_MS)),
        (None, bar.struct.field("1"), bar_seconds),
    ]
    code, step, seconds = pl.lit(None, pl.Utf8), pl.lit(None, pl.Utf8), pl.lit(None, pl.Float64)
    for name, s, sec in reversed(shapes):
        name = pl.format("tqdm/{}", bar.struct.field("2")) if name is None else pl.lit(name)
        code = pl.when(s.is_not_null()).then(name).otherwise(code)
        step = pl.when(s.is_not_null()).then(s).otherwise(step)
        seconds = pl.when(s.is_not_null()).then(sec).otherwise(seconds)
    stamp = clean.str.extract(ANY_TIME, 1).str.replace(",", ".", literal=True).str.replace(" ", "T", literal=True)
    when = local_to_utc(stamp.str.to_datetime("%Y-%m-%dT%H:%M:%S%.f", strict=False, time_unit="us"), tz)
    # a tqdm line: the update read (from the CR before it to the next), not the thousands of others
    update = clean.str.extract_all(r"[^\r]*\d+/\d+ \[[^\r]*").list.last()
    tps = clean.str.extract(r"\btps: *(\d[\d,]*)", 1).str.replace_all(",", "", literal=True)
    return {"code": code, "step": step, "step_seconds": seconds, "any_time": when,
            "_tps": pl.when(code == "torchtitan").then(tps.cast(pl.Int64, strict=False)),
            "message": pl.when(code.str.starts_with("tqdm/")).then(update).otherwise(clean).str.slice(0, 2000)}


def ms_to_seconds(text: pl.Expr, before: str) -> pl.Expr:
    """The milliseconds printed after the regex ``before`` ("1181.1") as seconds (1.1811), by moving the
    decimal point in the text: polars divides a column by a constant as a multiplication by its inverse on
    some lengths only, which would make a file's values depend on the rows read with it (a batch of files or
    the file alone)."""
    g = text.str.extract_groups(before + r"(\d*?)(\d{1,3})(?:\.(\d+))?(?:[^\d.]|$)")
    return pl.concat_str([g.struct.field("1"), pl.lit("."), g.struct.field("2").str.zfill(3),
                          g.struct.field("3").fill_null("")]).cast(pl.Float64, strict=False)


CARRY = {"_fid": pl.Int64, "code": pl.Utf8, "host": pl.Utf8, "task": pl.Int64, "rank": pl.Int64,
         "local_rank": pl.Int64, "log_time": pl.Datetime("us"), "step": pl.Int64}


@dataclass(frozen=True)
class Carry:
    """What a piece of a file leaves to the next: each worker's last line of a DERIVED shape (CARRY) and the
    tokens a rank's step holds as torchtitan last said."""
    workers: pl.DataFrame | None = None
    tokens: float | None = None


def batches(kept: pl.DataFrame) -> pl.DataFrame:
    """torchtitan's "Trainer is initialized with local batch size B, global batch size G, gradient accumulation
    steps A, sequence length S, ..." (or "Training starts at step N, with local batch size B, ..., sequence
    length S" before it): the tokens one rank's step holds, B x S x A, from that line on. The line itself
    stays skipped (a setting, as a CSV header is)."""
    t = pl.col("text")
    number = lambda pattern: t.str.extract(pattern, 1).cast(pl.Float64, strict=False)  # noqa: E731
    return (kept.filter(t.str.contains("local batch size", literal=True))
            .select("line_no", _fid=batched.fid_of(pl.col("line_no")),
                    tokens=number(r"local batch size (\d+),") * number(r"sequence length (\d+)")
                    * number(r"gradient accumulation steps (\d+)").fill_null(1.0))
            .filter(pl.col("tokens") > 0))


def derive(rows: pl.DataFrame, carry: Carry | None, batch_lines: pl.DataFrame) -> tuple[pl.DataFrame, Carry]:
    """The seconds of the step lines that print none: torchtitan's tokens per step over its tps where the
    batch is known (``batch_lines``, :func:`batches`), else, for every DERIVED shape, the time since the
    worker's previous line of the shape over the steps between. ``carry``: what the pieces of the file before
    left (:class:`Carry`), returned updated for the next."""
    carry = carry or Carry()
    if "_tps" in rows.columns:
        rows, tokens = _from_tps(rows, carry.tokens, batch_lines)
    else:
        tokens = _last_tokens(carry.tokens, batch_lines)
    key = ["_fid", "code", *WORKER]
    want = ((pl.col("kind") == "step_time") & pl.col("code").is_in(DERIVED) & pl.col("step").is_not_null()
            & pl.col("log_time").is_not_null())
    seq = rows.filter(want).select("line_no", _fid=batched.fid_of(pl.col("line_no")),
                                   **{c: pl.col(c).cast(t) for c, t in CARRY.items() if c != "_fid"})
    if not seq.height:
        return rows, Carry(carry.workers, tokens)
    if carry.workers is not None and carry.workers.height:
        seq = pl.concat([carry.workers.with_columns(line_no=pl.lit(-1, pl.Int64)), seq], how="diagonal_relaxed")
    gap = pl.col("step") - pl.col("step").shift(1).over(key)
    dt = pl.col("log_time") - pl.col("log_time").shift(1).over(key)
    seq = seq.sort("line_no", maintain_order=True).with_columns(
        derived=pl.when((gap > 0) & (dt >= pl.duration(microseconds=0)))
        .then(dt.dt.total_microseconds() / (gap * 1_000_000)))  # column by column: exact (ms_to_seconds)
    workers = seq.group_by(key, maintain_order=True).agg(pl.col("log_time").last(), pl.col("step").last())
    derived = seq.filter(pl.col("line_no") >= 0).select("line_no", "derived")
    rows = (rows.join(derived, on="line_no", how="left", maintain_order="left")
            .with_columns(step_seconds=pl.coalesce(["step_seconds", "derived"])).drop("derived"))
    return rows, Carry(workers.select(list(CARRY)), tokens)


def _last_tokens(before: float | None, batch_lines: pl.DataFrame) -> float | None:
    """The tokens per step in force at the end of this piece (a piece is one file: streaming)."""
    return batch_lines["tokens"][-1] if batch_lines.height else before


def _from_tps(rows: pl.DataFrame, before: float | None, batch_lines: pl.DataFrame) -> tuple[pl.DataFrame, float | None]:
    """torchtitan's tps is a rank's tokens per second over the steps since its last line (per device: with
    tensor, pipeline or context parallelism the seconds come out that many times the step's, the same factor
    for every rank), so its step took tokens per step / tps."""
    lines = rows.filter(pl.col("_tps") > 0).select("line_no", "_tps", _fid=batched.fid_of(pl.col("line_no")))
    if lines.height:
        lines = lines.join_asof(batch_lines, on="line_no", by="_fid", strategy="backward",
                                check_sortedness=False)  # both sorted by line_no, so by file too
        if before is not None:  # the batch line of an earlier piece of the file (fid 0)
            lines = lines.with_columns(tokens=pl.col("tokens").fill_null(before))
        # column by column: exact (ms_to_seconds)
        lines = lines.select("line_no", from_tps=pl.col("tokens") / pl.col("_tps").cast(pl.Float64))
        rows = (rows.join(lines, on="line_no", how="left", maintain_order="left")
                .with_columns(step_seconds=pl.coalesce(["step_seconds", "from_tps"])).drop("from_tps"))
    return rows.drop("_tps"), _last_tokens(before, batch_lines)
