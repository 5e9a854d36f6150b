"""benchmark_results rows -> samples: one quantile row per (run, host, metric, rank).

A sample is what one node produced for one metric in one run. When the
benchmark recorded per-step values (sample_idx set: end-to-end models) the
sample is their distribution, summarised as ``steps_q`` quantiles so runs of
different lengths compare. Otherwise it is the single value (repeated values
of the same key in one run are summarised by their median). Per-GPU (rank)
values are separate samples of the same metric rather than one node-wide
distribution: pooled, one GPU at 70% would move the node's CDF by only an
eighth and pass; kept apart, it fails on its own, as SuperBench's per-rank
rules do. nccl-tests message sizes are separate metrics (``busbw_oop@8589934592``).
"""
from __future__ import annotations

import numpy as np
import polars as pl

FAMILY = ["group", "benchmark", "metric"]
SAMPLE = ["run_id", "host", "rank"]


def _grid(q: int) -> list[float]:
    return [(i + 0.5) / q for i in range(q)]


def build(rows: pl.DataFrame, steps_q: int = 16, groups: pl.DataFrame | None = None) -> pl.DataFrame:
    """rows: run_id, run_time, host, benchmark, metric, rank, size_bytes, sample_idx, value.
    groups (optional): host -> group (a SKU or partition); criteria are learned per group.
    Returns group, benchmark, metric, run_id, run_time, host, rank, width, q (list of quantiles)."""
    rows = rows.with_columns(
        metric=pl.when(pl.col("size_bytes").is_null()).then(pl.col("metric"))
        .otherwise(pl.format("{}@{}", pl.col("metric"), pl.col("size_bytes"))),
        rank=pl.col("rank").fill_null(-1))
    if groups is not None and groups.height:
        rows = rows.join(groups.select("host", "group"), on="host", how="left").with_columns(
            pl.col("group").fill_null("all"))
    else:
        rows = rows.with_columns(group=pl.lit("all"))
    stepped = rows.filter(pl.col("sample_idx").is_not_null()).select("benchmark", "metric").unique()
    keys = FAMILY + SAMPLE
    scalar = (rows.join(stepped, on=["benchmark", "metric"], how="anti")
              .group_by(keys).agg(run_time=pl.col("run_time").min(), q=pl.concat_list(pl.col("value").median()))
              .with_columns(width=pl.lit(1, pl.Int32)))
    steps = (rows.join(stepped, on=["benchmark", "metric"], how="semi")
             .group_by(keys).agg(run_time=pl.col("run_time").min(),
                                 q=pl.concat_list([pl.col("value").quantile(p, "linear") for p in _grid(steps_q)]))
             .with_columns(width=pl.lit(steps_q, pl.Int32)))
    cols = [*FAMILY, "run_id", "run_time", "host", "rank", "width", "q"]
    return pl.concat([scalar.select(cols), steps.select(cols)]).sort(cols[:-2])


def matrix(family: pl.DataFrame) -> np.ndarray:
    """One family's samples as an n x Q array (Q = the family's width)."""
    width = int(family["width"].max())
    return family["q"].list.to_array(width).to_numpy() if family.height else np.empty((0, width))
