"""The online check (Anubis §3.4, eq. 4): each node's result in each run
against the criteria, and the node-level call over the runs of the window.

A node fails a run on a metric when
  - a judged metric's one-directional similarity to its criterion is under the
    criterion's alpha (only worse counts: a faster node passes), on any rank;
  - a pass/fail flag (return_code, gpu-burn's per-GPU pass) is not its pass value;
  - the metric is missing: the fleet reports it in that run (on at least
    ``missing_share`` of the run's nodes) and this node, which took part in the
    run, has no result for it, or fewer ranks than the fleet (which ranks is said).
Results naming several hosts (an nccl-tests run across nodes) never become
samples (sql/criteria/samples.sql): they cannot blame one node.
"""
from __future__ import annotations

import numpy as np
import polars as pl

from analysis.criteria import samples as S
from analysis.criteria.learn import JUDGED, CriteriaConfig
from analysis.criteria.similarity import one_sided_similarity

VERDICT_SCHEMA = {"run_id": pl.Utf8, "run_time": pl.Datetime("us"), "host": pl.Utf8, "group": pl.Utf8,
                  "benchmark": pl.Utf8, "metric": pl.Utf8, "rank": pl.Int32, "similarity": pl.Float64,
                  "value": pl.Float64, "verdict": pl.Utf8, "reason": pl.Utf8}


# where a verdict names the rank it came from
_ON_RANK = pl.when(pl.col("rank") >= 0).then(pl.format(" on rank {}", pl.col("rank"))).otherwise(pl.lit(""))


def _measured(samples: pl.DataFrame, criteria: pl.DataFrame) -> pl.DataFrame:
    judged = criteria.filter(pl.col("status").is_in(JUDGED))
    crit = {(r["group"], r["benchmark"], r["metric"]): r for r in judged.iter_rows(named=True)}
    parts = []
    for key, fam in S.families(samples.join(S.compact(judged.select(S.FAMILY)), on=S.FAMILY, how="semi")).items():
        c = crit[key]
        x = S.matrix(fam)
        one = fam.select("run_id", "run_time", "host", *S.FAMILY, "rank").with_columns(
            similarity=pl.Series(one_sided_similarity(x, np.asarray(c["criterion"]), c["direction"])),
            value=pl.Series(x.mean(axis=1)), alpha=pl.lit(c["alpha"]))
        if one["rank"].max() >= 0:  # the worst rank speaks for the node
            one = one.group_by("run_id", "host").agg(pl.all().get(pl.col("similarity").arg_min()))
        parts.append(one.select("run_id", "run_time", "host", *S.FAMILY, "rank", "similarity", "value", "alpha"))
    if not parts:
        return pl.DataFrame(schema=VERDICT_SCHEMA)
    worst = pl.concat(parts, how="vertical_relaxed")
    fail = pl.col("similarity") < pl.col("alpha")
    return worst.with_columns(
        verdict=pl.when(fail).then(pl.lit("fail")).otherwise(pl.lit("pass")),
        reason=pl.when(fail).then(pl.format("similarity {} under {}{} (value {})", pl.col("similarity").round(3),
                                            pl.col("alpha").round(3), _ON_RANK, pl.col("value").round_sig_figs(4)))
    ).select(_cast())


def _cast() -> list[pl.Expr]:
    return [pl.col(c).cast(t) for c, t in VERDICT_SCHEMA.items()]


def _flags(samples: pl.DataFrame, criteria: pl.DataFrame) -> pl.DataFrame:
    flags = S.compact(criteria.filter(pl.col("status") == "flag").select(*S.FAMILY, "pass_value"))
    rows = samples.join(flags, on=S.FAMILY)
    bad = pl.col("value") != pl.col("pass_value")
    worst = rows.group_by("run_id", "host", *S.FAMILY).agg(
        pl.col("run_time").first(), pl.col("rank").filter(bad).first(), pl.col("value").filter(bad).first(),
        pl.col("pass_value").first(), failed=bad.any())
    return worst.with_columns(
        similarity=pl.lit(None, pl.Float64),
        verdict=pl.when(pl.col("failed")).then(pl.lit("fail")).otherwise(pl.lit("pass")),
        reason=pl.when(pl.col("failed")).then(pl.format("flag {}{} (pass is {})", pl.col("value"), _ON_RANK,
                                                        pl.col("pass_value")))
    ).select(_cast())


def _missing(samples: pl.DataFrame, criteria: pl.DataFrame, cfg: CriteriaConfig) -> pl.DataFrame:
    """Metrics the fleet reports in a run that a node of that run lacks (all or some ranks).
    Each sample row is one host's (one rank's) result, so rows count hosts."""
    watched = S.compact(criteria.filter(pl.col("kind") != "info").select(S.FAMILY))
    s = samples.join(watched, on=S.FAMILY, how="semi")
    runs = samples.group_by("run_id").agg(pl.col("host").n_unique().alias("run_nodes"), pl.col("run_time").min())
    per_rank = s.group_by("run_id", *S.FAMILY, "rank").agg(nodes=pl.len())
    expected = (per_rank.join(runs.select("run_id", "run_nodes"), on="run_id")
                .filter(pl.col("nodes") >= cfg.missing_share * pl.col("run_nodes")))
    n_ranks = expected.group_by("run_id", *S.FAMILY).agg(n_ranks=pl.len(), nodes=pl.col("nodes").max(),
                                                         run_nodes=pl.col("run_nodes").first())
    have = s.join(expected.select("run_id", *S.FAMILY, "rank"), on=["run_id", *S.FAMILY, "rank"], how="semi") \
        .group_by("run_id", "host", *S.FAMILY).agg(have=pl.len())
    hosts = samples.select("run_id", "host", "group").unique()
    want = n_ranks.join(hosts, on=["run_id", "group"]).join(have, on=["run_id", "host", *S.FAMILY], how="left")
    short = want.filter(pl.col("have").fill_null(0) < pl.col("n_ranks"))
    if short.height == 0:
        return pl.DataFrame(schema=VERDICT_SCHEMA)
    # which ranks, for the few that lack some
    lacking = (short.select("run_id", "host", *S.FAMILY)
               .join(expected.select("run_id", *S.FAMILY, "rank"), on=["run_id", *S.FAMILY])
               .join(s.select("run_id", "host", *S.FAMILY, "rank"), on=["run_id", "host", *S.FAMILY, "rank"],
                     how="anti")
               .group_by("run_id", "host", *S.FAMILY).agg(pl.col("rank").sort()))
    out = short.join(lacking, on=["run_id", "host", *S.FAMILY]).join(runs.select("run_id", "run_time"), on="run_id")
    whole = pl.col("have").is_null()
    ranks = pl.col("rank").list.eval(pl.element().cast(pl.Utf8)).list.join(",")
    return out.with_columns(
        rank=pl.when(whole).then(pl.lit(None, pl.Int32)).otherwise(pl.col("rank").list.first()),
        similarity=pl.lit(None, pl.Float64), value=pl.lit(None, pl.Float64), verdict=pl.lit("fail"),
        reason=pl.when(whole).then(pl.format("missing: no result (the fleet reports it on {} of {} nodes)",
                                             pl.col("nodes"), pl.col("run_nodes")))
        .otherwise(pl.format("missing: no result on rank(s) {}", ranks))
    ).select(_cast())


def check(samples: pl.DataFrame, criteria: pl.DataFrame, cfg: CriteriaConfig = CriteriaConfig()) -> pl.DataFrame:
    """One row per (run, host, metric) judged: pass or fail, with the similarity and why."""
    out = pl.concat([_measured(samples, criteria), _flags(samples, criteria), _missing(samples, criteria, cfg)])
    return out.sort("run_time", "run_id", "host", "benchmark", "metric", nulls_last=True)


def node_status(verdicts: pl.DataFrame, cfg: CriteriaConfig = CriteriaConfig()) -> pl.DataFrame:
    """Per host over the window: runs taken, runs failed, the latest run and its
    failing metrics, and ``defective``: failed at least min_failed_runs runs and
    at least min_failed_share of its runs (one failed run is a re-test, a
    repeated one a defect)."""
    runs = verdicts.group_by("host", "run_id").agg(
        pl.col("run_time").min(), failed=(pl.col("verdict") == "fail").any(),
        failing=pl.format("{}/{}", "benchmark", "metric").filter(pl.col("verdict") == "fail").unique().sort())
    per_host = runs.sort("run_time", "run_id").group_by("host").agg(
        runs=pl.len(), failed_runs=pl.col("failed").sum(), last_run=pl.col("run_id").last(),
        last_run_time=pl.col("run_time").last(), last_failed=pl.col("failed").last(),
        last_failing=pl.col("failing").last(),
        first_failed_time=pl.col("run_time").filter(pl.col("failed")).first())
    return per_host.with_columns(
        defective=(pl.col("failed_runs") >= cfg.min_failed_runs)
        & (pl.col("failed_runs") >= cfg.min_failed_share * pl.col("runs"))).sort("host")
