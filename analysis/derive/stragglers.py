"""Stragglers: a worker of a distributed job slower than its peers at the same step, when it was, and what it
cost (issue 32; docs/methods.md#stragglers).

Input: step times, one row per worker and step (a job log's per-rank step lines) or per worker and time bucket
(a telemetry series of step or iteration time, averaged per bucket): job_id, instance, host, rank, key (the step,
or the bucket's index), time, step_seconds, position. Each worker is compared with its peers' pace at the same key
(the lower quartile of the other workers'), so a job that slows down as a whole (a checkpoint, a storage stall)
makes no straggler. A worker is slow at a key when the rolling median (3 keys) of its ratio is at least
``threshold`` and stays in its episode while it holds at ``hold``; runs with at least ``min_keys`` slow keys over
``min_seconds`` are an episode, told apart as:

- placement: slow from the job's first keys to (nearly) its end (heterogeneous hardware, a bad placement);
- persistent: from a change point to the end of the job;
- transient: a burst that ends before the job does.

Cost (What-if analysis, OSDI'25): a synchronous job waits for its slowest worker, so at each key the job's step
takes the maximum over its workers; at its peers' pace it would have taken the maximum over the workers in no
episode there. The difference, summed over the episode's keys (for a time bucket: the bucket's length times the share of
it the job spent waiting), is the training time the straggler cost; shared equally by workers slow together.

Everything is polars over the whole frame: no Python loop per job or row.
"""
from __future__ import annotations

from dataclasses import dataclass

import duckdb
import polars as pl
from scipy import special  # not scipy.stats: that takes a second to import, at every start of a run

from analysis import sql

STEP_COLUMNS = {"job_id": pl.Utf8, "instance": pl.Int64, "host": pl.Utf8, "rank": pl.Int64, "key": pl.Int64,
                "time": pl.Datetime("us"), "step_seconds": pl.Float64, "bucket_s": pl.Float64, "source": pl.Utf8,
                "position": pl.Int64}
EPISODE_COLUMNS = {"job_id": pl.Utf8, "instance": pl.Int64, "host": pl.Utf8, "ranks": pl.List(pl.Int64),
                   "start_time": pl.Datetime("us"), "end_time": pl.Datetime("us"), "keys": pl.Int64,
                   "slowdown": pl.Float64, "cost_seconds": pl.Float64, "kind": pl.Utf8, "concurrent": pl.Int64,
                   "source": pl.Utf8, "position": pl.Int64}
WORKER = ["job_id", "instance", "host"]
JOB = ["job_id", "instance"]
KEY = [*JOB, "key"]


@dataclass(frozen=True)
class StragglerConfig:
    threshold: float = 1.10  # ratio to the peers' pace that counts as slow (10% slower) ...
    hold: float = 1.05  # ... and, once slow, that keeps an episode going (hysteresis: no pieces near 1.10)
    peer_quantile: float = 0.25  # the peers' pace: this quantile of the other workers' step times
    min_keys: int = 3  # an episode has at least this many slow steps (or buckets) ...
    min_seconds: float = 60.0  # ... and lasts this long
    min_workers: int = 2  # hosts needed: with two, each is measured against the other
    edge_keys: int = 2  # within this many keys of the job's first or last: "from the start", "to the end"
    agree: float = 1.05  # a straggler moves with its job when slower by the same amount (max / min) elsewhere
    repeat_p: float = 0.05  # a host straggling in several jobs is the node's when that is this unlikely by chance


def _empty_episodes() -> pl.DataFrame:
    return pl.DataFrame(schema=EPISODE_COLUMNS)


def _per_worker(steps: pl.DataFrame) -> pl.DataFrame:
    """One value per worker (a host) and key: a bucket's samples, their mean; a host's ranks, its slowest (the
    host's pace) and which rank that was; its span (a log prints every k-th step: a key stands for the k steps
    since the job's previous key) and when its steps began (the worker's previous key, for a log line printed
    at the end of its steps; a bucket's start)."""
    steps = steps.select(list(STEP_COLUMNS)).filter(pl.col("step_seconds") > 0)
    per = (steps.group_by([*WORKER, "key", "rank"])
           .agg(pl.col("time").min(), pl.col("step_seconds").mean(), pl.col("bucket_s").first(),
                pl.col("source").first(), pl.col("position").first())
           .group_by([*WORKER, "key"])
           .agg(pl.col("rank").sort_by("step_seconds").last(), pl.col("time").min(), pl.col("step_seconds").max(),
                pl.col("bucket_s").first(), pl.col("source").first(), pl.col("position").first()))
    keys = (per.select(KEY).unique().sort(KEY)
            .with_columns(key_index=pl.col("key").rank("dense").over(JOB).cast(pl.Int64),
                          span=pl.col("key").diff().over(JOB)))
    keys = keys.with_columns(span=pl.col("span").fill_null(pl.col("span").shift(-1).over(JOB)).fill_null(1))
    per = per.join(keys, on=KEY).sort([*WORKER, "key"])
    bucketed = pl.col("bucket_s").is_not_null()
    own = pl.duration(microseconds=(pl.col("span") * pl.col("step_seconds") * 1e6).cast(pl.Int64))
    return per.with_columns(
        t_begin=pl.when(bucketed).then(pl.col("time"))
        .otherwise(pl.col("time").shift(1).over(WORKER).fill_null(pl.col("time") - own)),
        t_end=pl.when(bucketed).then(pl.col("time") + pl.duration(microseconds=(pl.col("bucket_s") * 1e6).cast(pl.Int64)))
        .otherwise(pl.col("time")))


def _peers(per: pl.DataFrame, q: float) -> pl.Expr:
    """Each worker's peers' pace at its key: the q-quantile (lower) of the other workers' step times. Left out
    by order statistics, not a join of every pair: of n values sorted, the others' j-th (j = floor(q (n - 2)))
    is the j-th for a worker above it, else the (j + 1)-th. A low quantile holds with most of a job slow at
    once; the worker left out makes a two-worker job each one's measure against the other."""
    ref = (per.group_by(KEY).agg(pl.col("step_seconds").sort().alias("sorted"), pl.len().alias("workers"))
           .with_columns(j=((pl.col("workers") - 2).clip(lower_bound=0) * q).floor().cast(pl.Int64)))
    ref = ref.with_columns(lo=pl.col("sorted").list.get(pl.col("j"), null_on_oob=True),
                           hi=pl.col("sorted").list.get(pl.col("j") + 1, null_on_oob=True)).drop("sorted")
    order = pl.col("step_seconds").rank("ordinal").over(KEY).cast(pl.Int64) - 1
    return per.with_columns(order=order).join(ref, on=KEY).with_columns(
        peers=pl.when(pl.col("order") > pl.col("j")).then(pl.col("lo")).otherwise(pl.col("hi"))).drop("order", "lo", "hi", "j")


def slow_keys(steps: pl.DataFrame, cfg: StragglerConfig = StragglerConfig()) -> pl.DataFrame:
    """Each worker's ratio to its peers' pace at each key, smoothed (rolling median of 3 keys); ``hot`` where
    it is at least the threshold, ``warm`` where at least the hold."""
    per = _peers(_per_worker(steps), cfg.peer_quantile)
    per = per.filter(pl.col("workers") >= cfg.min_workers).sort([*WORKER, "key"])
    per = per.with_columns(ratio=pl.col("step_seconds") / pl.col("peers"),
                           median=pl.col("step_seconds").median().over(KEY))
    per = per.with_columns(smooth=pl.col("ratio").rolling_median(3, min_samples=1, center=True).over(WORKER))
    return per.with_columns(hot=pl.col("smooth") >= cfg.threshold, warm=pl.col("smooth") >= cfg.hold,
                            first_key=pl.col("key_index").min().over(JOB), last_key=pl.col("key_index").max().over(JOB))


def _runs(per: pl.DataFrame, cfg: StragglerConfig) -> pl.DataFrame:
    """The keys of each episode: a run of warm keys (one missing key forgiven) trimmed to its first and last
    hot key, kept with ``min_keys`` hot keys over ``min_seconds``. -> WORKER, key, run."""
    warm = per.filter(pl.col("warm")).select(*WORKER, "key", "key_index", "hot", "t_begin", "t_end")
    warm = warm.with_columns(
        run=((pl.col("key_index") - pl.col("key_index").shift(1).over(WORKER)).fill_null(10**9) > 2).cum_sum().over(WORKER))
    run = [*WORKER, "run"]
    warm = warm.with_columns(h0=pl.col("key_index").filter(pl.col("hot")).min().over(run),
                             h1=pl.col("key_index").filter(pl.col("hot")).max().over(run))
    warm = warm.filter(pl.col("key_index").is_between(pl.col("h0"), pl.col("h1")))
    warm = warm.with_columns(n_hot=pl.col("hot").sum().over(run),
                             secs=(pl.col("t_end").max() - pl.col("t_begin").min()).over(run).dt.total_seconds())
    return warm.filter((pl.col("n_hot") >= cfg.min_keys) & (pl.col("secs") >= cfg.min_seconds)).select(*WORKER, "key", "run")


def episodes(steps: pl.DataFrame, cfg: StragglerConfig = StragglerConfig()) -> pl.DataFrame:
    """One row per straggler episode (EPISODE_COLUMNS)."""
    if "position" not in steps.columns:
        steps = steps.with_columns(position=pl.lit(None, pl.Int64))
    if steps.height == 0:
        return _empty_episodes()
    per = slow_keys(steps, cfg)
    runs = _runs(per, cfg)
    if runs.height == 0:
        return _empty_episodes()
    per = per.join(runs, on=[*WORKER, "key"], how="left").with_columns(straggling=pl.col("run").is_not_null())
    # what waiting for the stragglers cost at each key, shared by those straggling together there: the job's
    # step is its slowest worker's, at its peers' pace the slowest of the others'; a time bucket holds
    # bucket_s / job_step steps
    per = per.with_columns(
        job_step=pl.col("step_seconds").max().over(KEY),
        peers_pace=pl.col("step_seconds").filter(~pl.col("straggling")).max().over(KEY),
        together=pl.col("straggling").sum().over(KEY))
    per = per.filter(pl.col("straggling"))
    wait = (pl.col("job_step") - pl.col("peers_pace").fill_null(pl.col("median"))).clip(lower_bound=0)
    steps_in_key = (pl.when(pl.col("bucket_s").is_not_null()).then(pl.col("bucket_s") / pl.col("job_step"))
                    .otherwise(pl.col("span").cast(pl.Float64)))
    per = per.with_columns(cost=wait * steps_in_key / pl.col("together"))
    top = pl.col("rank").drop_nulls().mode().first()
    out = (per.group_by([*WORKER, "run"])
           .agg(top.alias("top_rank"), (pl.col("rank") == top).mean().alias("top_rank_share"),
                pl.col("t_begin").min().alias("start_time"), pl.col("t_end").max().alias("end_time"),
                pl.col("key_index").min().alias("k0"), pl.col("key_index").max().alias("k1"),
                pl.len().alias("keys"), pl.col("ratio").median().alias("slowdown"),
                pl.col("cost").sum().alias("cost_seconds"), pl.col("first_key").first(), pl.col("last_key").first(),
                pl.col("source").first(), pl.col("position").first()))
    # the slow rank, when one rank is the host's slowest through the episode (a job's skewed rank), else none
    out = out.with_columns(ranks=pl.when(pl.col("top_rank_share") >= 0.8).then(pl.concat_list("top_rank"))
                           .otherwise(pl.lit([], pl.List(pl.Int64))))
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


def _moving(who: pl.DataFrame, agree: float) -> pl.DataFrame:
    """The episodes of a slow worker that moves with its job: slow from the start at the same rank (else the
    same place in the node list) on two or more hosts in two or more instances, slower by the same amount
    (max / min slowdown <= ``agree``: the same work, the same imbalance). -> e, hosts."""
    return (who.filter((pl.col("kind") == "placement") & pl.col("who").is_not_null())
            .group_by(["job_id", "who"])
            .agg(pl.col("host").n_unique().alias("hosts"), pl.col("instance").n_unique().alias("instances"),
                 (pl.col("slowdown").max() / pl.col("slowdown").min()).alias("spread"), pl.col("e"))
            .filter((pl.col("hosts") >= 2) & (pl.col("instances") >= 2) & (pl.col("spread") <= agree))
            .explode("e").select("e", "hosts"))


def _host_evidence(found: pl.DataFrame, workers: pl.DataFrame | None, p_max: float) -> pl.DataFrame:
    """Per host: the jobs it straggled in (``strays``), the jobs it was measured in (``measured``) and whether
    that is more than chance: two or more jobs, and a binomial tail P(X >= strays | measured, fleet rate) under
    ``p_max``, the fleet rate being the share of measured (job, host) pairs with an episode. Without the
    measured workers, two or more jobs."""
    strays = found.group_by("host").agg(pl.col("job_id").n_unique().alias("strays"))
    if workers is None or workers.height == 0:
        return strays.with_columns(measured=pl.col("strays"), repeat=pl.col("strays") >= 2)
    pairs = workers.select("job_id", "host").unique()
    rate = found.select("job_id", "host").unique().height / max(pairs.height, 1)
    ev = pairs.group_by("host").agg(pl.len().alias("measured")).join(strays, on="host", how="left")
    ev = ev.with_columns(pl.col("strays").fill_null(0))
    # P(X >= strays) = P(X > strays - 1): bdtrc is the binomial's upper tail (NaN for no strays: no repeat then)
    tail = special.bdtrc(ev["strays"].to_numpy() - 1, ev["measured"].to_numpy(), min(rate, 1.0))
    return ev.with_columns(repeat=(pl.col("strays") >= 2) & pl.Series(tail < p_max))


def origin(found: pl.DataFrame, workers: pl.DataFrame | None = None, cfg: StragglerConfig = StragglerConfig()) -> pl.DataFrame:
    """Node or job? In this order (-> the episodes with ``origin``, its ``basis`` and ``why``):

    - job (basis moves): it moves with the job (``_moving``);
    - node (repeat): the host straggled in two or more jobs (other peers each time), more often than the
      fleet's hosts do (``_host_evidence``; ``workers``: job_id, host of every worker measured);
    - node (during): it slowed down during the run (transient, persistent): the same ranks, the same work, at
      pace before;
    - else undetermined (once): slow from the start in one job only; an uneven stage or data shard of the
      job, or the node's hardware or passing state, cannot be told apart from one run.
    """
    if found.height == 0:
        return found.with_columns(origin=pl.lit(None, pl.Utf8), basis=pl.lit(None, pl.Utf8), why=pl.lit(None, pl.Utf8))
    who = found.with_row_index("e").with_columns(
        who=pl.when(pl.col("ranks").list.len() == 1).then(pl.format("rank {}", pl.col("ranks").list.first()))
        .when(pl.col("position").is_not_null()).then(pl.format("node {} of the job's list", pl.col("position"))))
    moving = _moving(who, cfg.agree)
    # the host's record leaves out the episodes that moved with their jobs: those are not the node's
    settled = who.join(moving, on="e", how="anti")
    evidence = _host_evidence(settled, workers, cfg.repeat_p)
    out = (who.join(moving, on="e", how="left").join(evidence, on="host", how="left")
           .with_columns(pl.col("repeat").fill_null(False), pl.col("strays").fill_null(0),
                         pl.col("measured").fill_null(0)))
    during = pl.col("kind").is_in(["transient", "persistent"])
    moves = pl.col("hosts").is_not_null()
    paced = pl.col("measured") - pl.col("strays")
    return out.with_columns(
        origin=pl.when(moves).then(pl.lit("job")).when(pl.col("repeat") | during).then(pl.lit("node"))
        .otherwise(pl.lit("undetermined")),
        basis=pl.when(moves).then(pl.lit("moves")).when(pl.col("repeat")).then(pl.lit("repeat"))
        .when(during).then(pl.lit("during")).otherwise(pl.lit("once")),
        why=pl.when(moves)
        .then(pl.format("{} was slow from the start by the same amount on {} hosts: it moves with the job",
                        pl.col("who"), pl.col("hosts")))
        .when(pl.col("repeat")).then(pl.format("the host straggled in {} of the {} jobs measured on it",
                                               pl.col("strays"), pl.col("measured")))
        .when(during).then(pl.lit("it slowed down during the run, on the same work"))
        .when(paced > 0).then(pl.format("slow from the start in this job only (the host kept pace in {} other "
                                        "jobs): the job's placement, or a passing state of the node", paced))
        .otherwise(pl.lit("slow from the start in its only job measured: the node or the job's placement"))
    ).drop("e", "who", "hosts", "strays", "measured", "repeat")


def build(con: duckdb.DuckDBPyConnection, cfg: StragglerConfig = StragglerConfig(), bucket_s: int = 60) -> int:
    """straggler_episodes from the warehouse's step times: telemetry series of step or iteration time
    (sql/derive/stage_step_times_telemetry.sql) and, once the job logs carry them, the per-rank step lines of the
    jobs' own logs; -> the episodes found."""
    sql.run(con, "derive/stage_telemetry_metrics")
    sql.run(con, "derive/stage_step_times_telemetry", {"min_workers": cfg.min_workers, "bucket_s": bucket_s})
    if sql.column_exists(con, "job_log_lines", "step_seconds"):
        sql.run(con, "derive/stage_step_times_joblogs", {"min_workers": cfg.min_workers})
    steps = con.sql("SELECT * FROM step_times_staged").pl()
    # one source per job instance: its own log's per-step lines when it has them (exact, per rank), else telemetry
    has_log = (pl.col("source") == "joblog").any().over(JOB)
    steps = steps.filter((pl.col("source") == "joblog") | ~has_log)
    found = origin(episodes(steps.cast({k: v for k, v in STEP_COLUMNS.items() if k in steps.columns}), cfg),
                   workers=steps.select("job_id", "host").unique(), cfg=cfg)
    sql.run_staged(con, {"staged_episodes": found}, [("derive/store_straggler_episodes", None)])
    con.execute("DROP TABLE IF EXISTS temp.step_times_staged")
    con.execute("DROP TABLE IF EXISTS temp.telemetry_metrics")
    return found.height
