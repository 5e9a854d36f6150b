"""criteria_evaluation: Algorithm 2 against the IQR and k-means baselines
(Anubis §5.3), per benchmark.

Each method splits a metric's samples into healthy and defective:
  alg2    defective = one-sided similarity to the learned criterion under alpha;
  iqr     on each sample's mean: defective beyond the 1.5 IQR fence on the
          worse side;
  kmeans  k = 2 on the samples (Euclidean, as the paper); defective = the
          minority cluster.
(The paper also names each baseline's criterion, the median inside the fence
and the majority cluster's mean; the margin below does not need them.)
Margin ratio (our copy of the paper states no formula; this is our reading
of "the margin between healthy and defective nodes"). It is taken over nodes,
as the paper's samples were (one validation run per VM): each node's samples
are folded to one (its worst rank in each run, then the median over its runs;
a single run is just the worst rank), and each method splits those. On their
means, oriented so higher is better, the gap between the classes as a ratio of
how far the healthy class itself reaches below the fleet's median m:
    (worst healthy - best defective) / (m - worst healthy).
m is the same for every method, so two methods that split the samples the
same way tie. Above 1: the defects sit further from the healthy nodes than
the healthy nodes spread. Calling a marginal healthy sample defective (IQR's
tail) shrinks it; so does calling a marginal degraded sample defective, which
is what alpha asks for: k-means, which cuts at the widest gap and leaves
mildly degraded samples in its healthy class, can win on margin while it
misses them. A method that flags nothing on a metric draws no boundary there
and gets no margin on it. Flagged counts are nodes.
"""
from __future__ import annotations

import numpy as np
import polars as pl
from sklearn.cluster import KMeans

from analysis.criteria import samples as S
from analysis.criteria.learn import JUDGED
from analysis.criteria.similarity import one_sided_similarity, repeatability

METHODS = ("alg2", "iqr", "kmeans")
KMEANS_FIT_MAX = 20_000  # k-means is fitted on a seeded subset this big, then labels every sample


def margin_ratio(g: np.ndarray, bad: np.ndarray) -> float | None:
    if not bad.any() or bad.all():
        return None
    m, worst_healthy = float(np.median(g)), g[~bad].min()
    # a healthy class with no reach below the median (quantised values) counts as reaching 0.1% of it
    reach = max(m - worst_healthy, 1e-3 * abs(m), 1e-12)
    return float((worst_healthy - g[bad].max()) / reach)


def _iqr(g: np.ndarray) -> np.ndarray:
    q1, q3 = np.quantile(g, [0.25, 0.75])
    return g < q1 - 1.5 * (q3 - q1)


def _kmeans(x: np.ndarray, seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    fit = x if len(x) <= KMEANS_FIT_MAX else x[rng.choice(len(x), KMEANS_FIT_MAX, replace=False)]
    if len(np.unique(fit, axis=0)) < 2:
        return np.zeros(len(x), dtype=bool)
    km = KMeans(n_clusters=2, n_init=3, random_state=seed).fit(fit)
    labels = km.predict(x)
    return labels != int(np.bincount(labels, minlength=2).argmax())


def family_flags(x: np.ndarray, criterion: np.ndarray, direction: str, alpha: float) -> dict[str, np.ndarray]:
    """Per method: which of one metric's samples it calls defective."""
    sign = 1.0 if direction == "higher" else -1.0
    return {"alg2": one_sided_similarity(x, criterion, direction) < alpha,
            "iqr": _iqr(sign * x.mean(axis=1)), "kmeans": _kmeans(sign * x)}


def family_margins(x: np.ndarray, criterion: np.ndarray, direction: str, alpha: float) -> dict:
    """Per method: flagged count and margin ratio on one metric's samples."""
    g = (1.0 if direction == "higher" else -1.0) * x.mean(axis=1)  # higher is better for every metric
    return {m: (int(bad.sum()), margin_ratio(g, bad)) for m, bad in family_flags(x, criterion, direction, alpha).items()}


MEASURED = ("ok", "loose", "noisy", "bimodal", "coarse")


def healthy_repeatability(samples: pl.DataFrame, criteria: pl.DataFrame, verdicts: pl.DataFrame) -> pl.DataFrame:
    """criteria with ``repeatability`` filled in: the mean pairwise similarity of
    each measured metric's samples from the nodes that passed that benchmark in
    that run (Anubis: among healthy nodes). Noisy metrics count too: they are
    what makes a benchmark unrepeatable."""
    failed = S.compact(verdicts.filter(pl.col("verdict") == "fail").select("run_id", "host", "group", "benchmark")
                       .unique())
    measured = S.compact(criteria.filter(pl.col("status").is_in(MEASURED)).select(S.FAMILY))
    healthy = (samples.join(measured, on=S.FAMILY, how="semi")
               .join(failed, on=["run_id", "host", "group", "benchmark"], how="anti"))
    reps = [(*key, repeatability(S.matrix(fam))) for key, fam in S.families(healthy).items()]
    table = pl.DataFrame(reps, schema={"group": pl.Utf8, "benchmark": pl.Utf8, "metric": pl.Utf8,
                                       "repeatability": pl.Float64}, orient="row")
    return criteria.drop("repeatability", strict=False).join(table, on=S.FAMILY, how="left", maintain_order="left")


def per_node(family: pl.DataFrame, direction: str) -> np.ndarray:
    """One family's samples folded to one per node: in each run the node's worst rank (a node is as good
    as its worst GPU), then the element-wise median over its runs. The margin is between healthy and
    defective *nodes*: one slow run is not a slow node."""
    sign = 1.0 if direction == "higher" else -1.0
    worst = (family.with_columns(g=sign * pl.col("value"))
             .group_by("host", "run_id").agg(pl.all().sort_by("g").first()))
    width = int(family["width"].max())
    if width == 1:
        return worst.group_by("host").agg(pl.col("value").median()).sort("host")["value"].to_numpy().reshape(-1, 1)
    long = worst.select("host", pl.col("q").list.to_array(width).arr.to_list()).with_columns(
        j=pl.int_ranges(0, width)).explode("q", "j")
    folded = long.group_by("host", "j").agg(pl.col("q").median()).sort("host", "j")
    return folded["q"].to_numpy().reshape(-1, width)


def evaluate(samples: pl.DataFrame, criteria: pl.DataFrame) -> tuple[pl.DataFrame, pl.DataFrame]:
    """(per metric, per benchmark) tables. Per benchmark: repeatability = mean over
    its measured metrics (criteria from healthy_repeatability); each method's
    margin = mean over the judged metrics where it drew a boundary, with how many."""
    judged = criteria.filter(pl.col("status").is_in(JUDGED))
    crit = {(r["group"], r["benchmark"], r["metric"]): r for r in judged.iter_rows(named=True)}
    rows = []
    for key, fam in S.families(samples.join(S.compact(judged.select(S.FAMILY)), on=S.FAMILY, how="semi")).items():
        c = crit[key]
        m = family_margins(per_node(fam, c["direction"]), np.asarray(c["criterion"]), c["direction"], c["alpha"])
        row = dict(zip(S.FAMILY, key), repeatability=c["repeatability"], n_samples=fam.height)
        for method, (n, margin) in m.items():
            row[f"flagged_{method}"], row[f"margin_{method}"] = n, margin
        rows.append(row)
    schema = {"group": pl.Utf8, "benchmark": pl.Utf8, "metric": pl.Utf8, "repeatability": pl.Float64,
              "n_samples": pl.Int64, **{f"{k}_{m}": (pl.Int64 if k == "flagged" else pl.Float64)
                                        for m in METHODS for k in ("flagged", "margin")}}
    per_metric = pl.from_dicts(rows, schema=schema) if rows else pl.DataFrame(schema=schema)
    reps = criteria.filter(pl.col("status").is_in(MEASURED)).group_by("group", "benchmark").agg(
        repeatability=pl.col("repeatability").mean(), measured=pl.len())
    per_bench = per_metric.drop("repeatability").group_by("group", "benchmark").agg(
        metrics=pl.len(), samples=pl.col("n_samples").sum(),
        **{f"flagged_{m}": pl.col(f"flagged_{m}").sum() for m in METHODS},
        **{f"margin_{m}": pl.col(f"margin_{m}").mean() for m in METHODS},
        **{f"margin_metrics_{m}": pl.col(f"margin_{m}").is_not_null().sum() for m in METHODS},
    )
    per_bench = reps.join(per_bench, on=["group", "benchmark"], how="left").with_columns(
        pl.col("metrics").fill_null(0)).sort("group", "benchmark")
    return per_metric, per_bench
