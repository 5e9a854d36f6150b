"""Samples: one row per (run, host, metric, rank), built by sql/criteria/samples.sql.

A sample is what one node produced for one metric in one run. When the
benchmark recorded per-step values (sample_idx set: end-to-end models) the
sample is their distribution, summarised as ``steps_q`` quantiles (list column
``q``, ``width`` of them) so runs of different lengths compare. Otherwise it is the single value
(``value``; repeated values of the same key in one run are summarised by their
mean). Per-GPU (rank) values are separate samples of the same metric rather
than one node-wide distribution: pooled, one GPU at 70% would move the node's
CDF by only an eighth and pass; kept apart, it fails on its own, as
SuperBench's per-rank rules do. nccl-tests message sizes are separate metrics
(``busbw_oop@8589934592``).

Text columns are categorical: a year of weekly runs on 2,000 nodes is ~10^7
values, and the run, host and metric names repeat in every one of them.
"""
from __future__ import annotations

import numpy as np
import polars as pl

FAMILY = ["group", "benchmark", "metric"]
TEXT = ["run_id", "host", "benchmark", "metric", "group"]


def grid(q: int) -> list[float]:
    """The quantiles a per-step sample is summarised by (midpoints: the area between CDFs is their mean)."""
    return [(i + 0.5) / q for i in range(q)]


def compact(frame: pl.DataFrame) -> pl.DataFrame:
    """Text columns as categoricals."""
    return frame.with_columns(pl.col(c).cast(pl.Categorical) for c in TEXT if c in frame.columns)


def with_groups(samples: pl.DataFrame, groups: pl.DataFrame | None = None) -> pl.DataFrame:
    """Samples (sql/criteria/samples.sql) with their host group: a SKU or partition from ``groups``
    (host, group), else 'all'. Criteria are learned per group."""
    samples = compact(samples)
    if groups is not None and groups.height:
        return samples.join(compact(groups.select("host", "group")), on="host", how="left").with_columns(
            pl.col("group").fill_null("all"))
    return samples.with_columns(group=pl.lit("all", pl.Categorical))


def matrix(family: pl.DataFrame) -> np.ndarray:
    """One family's samples as an n x Q array (Q = the family's width)."""
    width = int(family["width"].max()) if family.height else 1
    if width == 1:
        return family["value"].to_numpy().reshape(-1, 1)
    return family["q"].list.to_array(width).to_numpy()


def families(samples: pl.DataFrame) -> dict[tuple, pl.DataFrame]:
    """(group, benchmark, metric) -> its samples, in sorted order: whatever order the rows came in,
    the same samples give the same criteria (the seeded subsets taken from them included)."""
    parts = samples.partition_by(FAMILY, as_dict=True)
    return {tuple(str(k) for k in key): parts[key].sort("run_id", "host", "rank")
            for key in sorted(parts, key=lambda k: tuple(str(x) for x in k))}
