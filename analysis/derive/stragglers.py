"""Stragglers: a worker of a distributed job slower than its peers at the same step, when it was, and what it
cost (issue 32; docs/methods.md#stragglers).

Input: step times, one row per worker and step (a job log's per-rank step lines) or per worker and time bucket
(a telemetry series of step or iteration time, averaged per bucket): job_id, instance, host, rank, key (the step,
or the bucket's index), time, step_seconds. Each worker is compared with the median of its peers at the same key,
so a job that slows down as a whole (a checkpoint, a storage stall) makes no straggler. A worker is slow at a key
when the rolling median (3 keys) of its ratio is at least ``threshold``; consecutive slow keys (a gap of one
forgiven) of at least ``min_keys`` keys and ``min_seconds`` are an episode, told apart as:

- placement: slow from the job's first keys to (nearly) its end (heterogeneous hardware, a bad placement);
- persistent: from a change point to the end of the job;
- transient: a burst that ends before the job does.

Cost (What-if analysis, OSDI'25): a synchronous job waits for its slowest worker, so at each key the job's step
takes the maximum over its workers; at its peers' pace it would have taken the maximum over the workers not slow
there. The difference, summed over the episode's keys (for a time bucket: the bucket's length times the share of
it the job spent waiting), is the training time the straggler cost; shared equally by workers slow together.

Everything is polars over the whole frame: no Python loop per job or row.
"""
from __future__ import annotations

from dataclasses import dataclass

import duckdb
import polars as pl

from analysis import sql

STEP_COLUMNS = {"job_id": pl.Utf8, "instance": pl.Int64, "host": pl.Utf8, "rank": pl.Int64, "key": pl.Int64,
                "time": pl.Datetime("us"), "step_seconds": pl.Float64, "bucket_s": pl.Float64, "source": pl.Utf8}
EPISODE_COLUMNS = {"job_id": pl.Utf8, "instance": pl.Int64, "host": pl.Utf8, "ranks": pl.List(pl.Int64),
                   "start_time": pl.Datetime("us"), "end_time": pl.Datetime("us"), "keys": pl.Int64,
                   "slowdown": pl.Float64, "cost_seconds": pl.Float64, "kind": pl.Utf8, "concurrent": pl.Int64,
                   "source": pl.Utf8}
WORKER = ["job_id", "instance", "host"]
JOB = ["job_id", "instance"]


@dataclass(frozen=True)
class StragglerConfig:
    threshold: float = 1.10  # ratio to the peers' median that counts as slow (10% slower)
    min_keys: int = 3  # an episode spans at least this many steps (or buckets) ...
    min_seconds: float = 60.0  # ... and this long
    min_workers: int = 2  # hosts needed: with two, the slower stands above their midpoint
    edge_keys: int = 2  # within this many keys of the job's first or last: "from the start", "to the end"


def _empty_episodes() -> pl.DataFrame:
    return pl.DataFrame(schema=EPISODE_COLUMNS)


def slow_keys(steps: pl.DataFrame, cfg: StragglerConfig = StragglerConfig()) -> pl.DataFrame:
    """Each worker's ratio to its peers' median at each key, smoothed, and whether it is slow there; the job's
    step (the slowest worker's) and its peers' pace (the slowest worker not slow there)."""
    steps = steps.select(list(STEP_COLUMNS)).filter(pl.col("step_seconds") > 0)
    # one value per worker (a host) and key: a bucket of several samples, their mean; a host's several ranks,
    # its slowest (the host's pace), and which rank that was
    per = (steps.group_by([*WORKER, "key", "rank"])
           .agg(pl.col("time").min(), pl.col("step_seconds").mean(), pl.col("bucket_s").first(), pl.col("source").first())
           .group_by([*WORKER, "key"])
           .agg(pl.col("rank").sort_by("step_seconds").last(), pl.col("time").min(), pl.col("step_seconds").max(),
                pl.col("bucket_s").first(), pl.col("source").first()))
    # a log prints every k-th step: a key stands for the k steps since the job's previous key
    keys = (per.select([*JOB, "key"]).unique().sort([*JOB, "key"])
            .with_columns(key_index=pl.col("key").rank("dense").over(JOB).cast(pl.Int64),
                          span=pl.col("key").diff().over(JOB)))
    keys = keys.with_columns(span=pl.col("span").fill_null(pl.col("span").shift(-1).over(JOB)).fill_null(1))
    per = per.join(keys, on=[*JOB, "key"])
    per = per.with_columns(
        median=pl.col("step_seconds").median().over([*JOB, "key"]),
        workers=pl.len().over([*JOB, "key"]))
    per = per.filter(pl.col("workers") >= cfg.min_workers).sort([*WORKER, "key"])
    per = per.with_columns(ratio=pl.col("step_seconds") / pl.col("median"))
    per = per.with_columns(smooth=pl.col("ratio").rolling_median(3, min_samples=1, center=True).over(WORKER))
    per = per.with_columns(slow=pl.col("smooth") >= cfg.threshold)
    return per.with_columns(
        job_step=pl.col("step_seconds").max().over([*JOB, "key"]),
        peers_pace=pl.col("step_seconds").filter(~pl.col("slow")).max().over([*JOB, "key"]),
        slow_together=pl.col("slow").sum().over([*JOB, "key"]),
        first_key=pl.col("key_index").min().over(JOB), last_key=pl.col("key_index").max().over(JOB))


def episodes(steps: pl.DataFrame, cfg: StragglerConfig = StragglerConfig()) -> pl.DataFrame:
    """One row per straggler episode (EPISODE_COLUMNS)."""
    if steps.height == 0:
        return _empty_episodes()
    per = slow_keys(steps, cfg).filter(pl.col("slow"))
    if per.height == 0:
        return _empty_episodes()
    # a run of slow keys, one missing key forgiven (a noisy step in the middle of an episode)
    per = per.with_columns(
        gap=(pl.col("key_index") - pl.col("key_index").shift(1).over(WORKER)).fill_null(10**9))
    per = per.with_columns(run=(pl.col("gap") > 2).cum_sum().over(WORKER))
    # what waiting for the slow workers cost at each key, shared by those slow together there; a time bucket
    # holds bucket_s / job_step steps
    wait = (pl.col("job_step") - pl.col("peers_pace").fill_null(pl.col("median"))).clip(lower_bound=0)
    steps_in_key = (pl.when(pl.col("bucket_s").is_not_null()).then(pl.col("bucket_s") / pl.col("job_step"))
                    .otherwise(pl.col("span").cast(pl.Float64)))
    per = per.with_columns(cost=wait * steps_in_key / pl.col("slow_together"))
    out = (per.group_by([*WORKER, "run"])
           .agg(pl.col("rank").drop_nulls().mode().first().alias("top_rank"),
                (pl.col("rank") == pl.col("rank").drop_nulls().mode().first()).mean().alias("top_rank_share"),
                pl.col("time").min().alias("start_time"),
                pl.col("time").max().alias("end_time"), pl.col("key_index").min().alias("k0"),
                pl.col("key_index").max().alias("k1"),
                pl.len().alias("keys"), pl.col("ratio").median().alias("slowdown"), pl.col("cost").sum().alias("cost_seconds"),
                pl.col("first_key").first(), pl.col("last_key").first(), pl.col("source").first(),
                pl.col("bucket_s").first(), (pl.col("job_step") * pl.col("span")).median().alias("typical_step")))
    # the slow rank, when one rank is the host's slowest through the episode (a job's skewed rank), else none
    out = out.with_columns(ranks=pl.when(pl.col("top_rank_share") >= 0.8).then(pl.concat_list("top_rank"))
                           .otherwise(pl.lit([], pl.List(pl.Int64))))
    # an episode's span: its keys' times, plus one step (or bucket) for the last
    span = pl.when(pl.col("bucket_s").is_not_null()).then(pl.col("bucket_s")).otherwise(pl.col("typical_step"))
    out = out.with_columns(end_time=pl.col("end_time") + pl.duration(microseconds=(span * 1e6).cast(pl.Int64)))
    long_enough = ((pl.col("keys") >= cfg.min_keys)
                   & ((pl.col("end_time") - pl.col("start_time")).dt.total_seconds() >= cfg.min_seconds))
    out = out.filter(long_enough)
    from_start = pl.col("k0") <= pl.col("first_key") + cfg.edge_keys
    to_end = pl.col("k1") >= pl.col("last_key") - cfg.edge_keys
    out = out.with_columns(kind=pl.when(from_start & to_end).then(pl.lit("placement"))
                           .when(to_end).then(pl.lit("persistent")).otherwise(pl.lit("transient")))
    # several stragglers at once in one job: how many other workers' episodes overlap this one
    pairs = out.select([*JOB, "host", "start_time", "end_time"]).join(
        out.select([*JOB, pl.col("host").alias("other"), pl.col("start_time").alias("s2"), pl.col("end_time").alias("e2")]),
        on=JOB).filter((pl.col("other") != pl.col("host")) & (pl.col("s2") < pl.col("end_time"))
                       & (pl.col("e2") > pl.col("start_time")))
    together = pairs.group_by([*JOB, "host", "start_time"]).agg(pl.col("other").n_unique().alias("concurrent"))
    out = out.join(together, on=[*JOB, "host", "start_time"], how="left").with_columns(pl.col("concurrent").fill_null(0))
    return out.select(list(EPISODE_COLUMNS)).cast(EPISODE_COLUMNS).sort([*JOB, "start_time", "host"])


def origin(found: pl.DataFrame) -> pl.DataFrame:
    """Node or job? A host that straggles in two or more jobs (other peers each time) is the node's problem; a
    rank slow in two or more instances of a job on different hosts moves with the job (a pipeline stage, data
    skew), as does a job whose instances each straggle on another host slow in no other job; otherwise
    undetermined. -> the episodes with ``origin`` and ``why``."""
    if found.height == 0:
        return found.with_columns(origin=pl.lit(None, pl.Utf8), why=pl.lit(None, pl.Utf8))
    jobs_per_host = found.group_by("host").agg(pl.col("job_id").n_unique().alias("host_jobs"))
    by_rank = (found.explode("ranks").drop_nulls("ranks")
               .group_by(["job_id", "ranks"]).agg(pl.col("host").n_unique().alias("rank_hosts"),
                                                   pl.col("instance").n_unique().alias("rank_instances")))
    rank_moves = (found.explode("ranks").join(by_rank, on=["job_id", "ranks"], how="left")
                  .filter((pl.col("rank_hosts") >= 2) & (pl.col("rank_instances") >= 2))
                  .select(*JOB, "host", "start_time"))
    # without ranks (telemetry names hosts only): a job whose instances each straggle on other hosts, none of
    # them slow in any other job, carries its straggler with it
    per_job = (found.join(jobs_per_host, on="host").group_by("job_id")
               .agg(pl.col("instance").n_unique().alias("instances"), pl.col("host").n_unique().alias("hosts"),
                    (pl.col("host_jobs") == 1).all().alias("only_here")))
    job_moves = (found.join(per_job.filter((pl.col("instances") >= 2) & (pl.col("hosts") >= 2) & pl.col("only_here")),
                            on="job_id").select(*JOB, "host", "start_time"))
    rank_moves = pl.concat([rank_moves, job_moves]).unique().with_columns(moves=pl.lit(True))
    out = (found.join(jobs_per_host, on="host", how="left")
           .join(rank_moves, on=[*JOB, "host", "start_time"], how="left")
           .with_columns(pl.col("moves").fill_null(False)))
    return out.with_columns(
        origin=pl.when(pl.col("moves")).then(pl.lit("job"))
        .when(pl.col("host_jobs") >= 2).then(pl.lit("node")).otherwise(pl.lit("undetermined")),
        why=pl.when(pl.col("moves")).then(pl.lit("the straggler moved with the job to other hosts"))
        .when(pl.col("host_jobs") >= 2).then(pl.format("the host straggled in {} jobs", pl.col("host_jobs")))
        .otherwise(pl.lit("seen in one job only"))).drop("host_jobs", "moves")


def build(con: duckdb.DuckDBPyConnection, cfg: StragglerConfig = StragglerConfig(), bucket_s: int = 60) -> int:
    """straggler_episodes from the warehouse's step times: telemetry series of step or iteration time
    (sql/derive/stage_step_times_telemetry.sql) and, once the job logs carry them, the per-rank step lines of the
    jobs' own logs; -> the episodes found."""
    sql.run(con, "derive/stage_step_times_telemetry", {"min_workers": cfg.min_workers, "bucket_s": bucket_s})
    if sql.column_exists(con, "job_log_lines", "step_seconds"):
        sql.run(con, "derive/stage_step_times_joblogs", {"min_workers": cfg.min_workers})
    steps = con.sql("SELECT * FROM step_times_staged").pl()
    # one source per job instance: its own log's per-step lines when it has them (exact, per rank), else telemetry
    has_log = (pl.col("source") == "joblog").any().over(JOB)
    steps = steps.filter((pl.col("source") == "joblog") | ~has_log)
    found = origin(episodes(steps.cast({k: v for k, v in STEP_COLUMNS.items() if k in steps.columns}), cfg))
    sql.run_staged(con, {"staged_episodes": found}, [("derive/store_straggler_episodes", None)])
    con.execute("DROP TABLE IF EXISTS temp.step_times_staged")
    return found.height
