"""Criteria per benchmark metric (and per host group when there are groups):
Algorithm 2 at the required similarity alpha, then a noise check that decides
whether the metric can be judged at all.

Why the noise check: a validation run judges hundreds of metrics per node, so
a metric may false-alarm on a healthy node only very rarely (one in ~10^5)
or every node fails something. The healthy spread sigma is read from the
kept samples' worse-side tail (their 5th and 1st percentile similarity to the
criterion, as Gaussian z-scores 1.645 and 2.326). The metric is judged when
alpha lies at least ``noise_z`` sigmas out (status ok); when it does not, the
threshold is widened to 1 - noise_z * sigma (status loose: a gross failure is
still caught) as long as that stays at or above ``min_alpha``. It is not
judged (status noisy) below that, nor when more than ``max_near_share`` of
the samples sit within a third of the tolerance of the threshold, on either
side: with no margin between healthy and degraded, any threshold cuts
through a heavy tail (tail latencies, small messages; a Gaussian spread
4.5 sigmas inside puts ~0.1% there). Nor when Algorithm 2 set aside more
than ``max_drop_share`` of the samples (bimodal: no single healthy level), nor
when values are printed too coarsely to resolve the threshold (coarse).
"""
from __future__ import annotations

import numpy as np
import polars as pl

from analysis.criteria import samples as S
from analysis.criteria.similarity import learn_criterion, one_sided_similarity
from analysis.settings import CriteriaConfig

JUDGED = ("ok", "loose")
Z05, Z01 = 1.645, 2.326


CRITERIA_SCHEMA = {
    "group": pl.Utf8, "benchmark": pl.Utf8, "metric": pl.Utf8, "kind": pl.Utf8, "direction": pl.Utf8,
    "unit": pl.Utf8, "guessed_direction": pl.Boolean, "status": pl.Utf8, "reason": pl.Utf8,
    "criterion": pl.List(pl.Float64), "criterion_value": pl.Float64, "alpha": pl.Float64, "threshold": pl.Float64,
    "pass_value": pl.Float64, "n_samples": pl.Int64, "n_hosts": pl.Int64, "n_dropped": pl.Int64,
    "repeatability": pl.Float64, "sigma": pl.Float64}


def _noise(s1_kept: np.ndarray) -> float:
    """sigma: the larger of the estimates from the 5% and the 1% worse-side tail."""
    return max((1 - float(np.quantile(s1_kept, 0.05))) / Z05, (1 - float(np.quantile(s1_kept, 0.01))) / Z01)


def _resolution(x: np.ndarray) -> float:
    """The smallest step between distinct values, relative to the median: how finely the tool prints it."""
    vals = np.unique(x.mean(axis=1))
    med = abs(float(np.median(vals))) if len(vals) else 0.0
    steps = np.diff(vals)
    steps = steps[steps > 0]
    return float(steps.min() / med) if len(steps) and med > 0 else 0.0


def learn_family(x: np.ndarray, direction: str, cfg: CriteriaConfig) -> dict:
    """One measured metric's samples (n x Q) -> criterion, status and figures."""
    alpha = cfg.alpha
    for _ in range(cfg.max_iter):
        criterion, kept = learn_criterion(x, alpha)
        s1 = one_sided_similarity(x, criterion, direction)
        sigma = _noise(s1[kept])
        widened = min(cfg.alpha, 1 - cfg.noise_z * sigma)
        if widened >= alpha - 1e-4 or widened < cfg.min_alpha:
            break
        alpha = widened  # relearn with the wider threshold: the kept set then holds the whole healthy spread
    share = float((~kept).mean())
    band = (1 - alpha) / 3
    near = float(np.mean(np.abs(s1 - alpha) < band))
    if widened < cfg.min_alpha:
        status, reason = "noisy", f"healthy spread sigma {sigma:.3f}: a threshold {cfg.noise_z} sigmas out would be " \
                                  f"similarity {widened:.3f}, under min_alpha {cfg.min_alpha}"
    elif near > cfg.max_near_share:
        status, reason = "noisy", f"{near:.1%} of the samples sit within {band:.1%} of the threshold: no margin " \
                                  "between healthy and degraded (a heavy tail: tail latencies, small messages)"
    elif share > cfg.max_drop_share:
        status, reason = "bimodal", f"Algorithm 2 set aside {share:.0%} of the samples: no single healthy level"
    elif _resolution(x) > (1 - alpha) / 2:
        status, reason = "coarse", f"values printed in steps of {_resolution(x):.1%}: too coarse for a " \
                                   f"{1 - alpha:.1%} threshold"
    elif alpha < cfg.alpha:
        status, reason = "loose", f"healthy spread sigma {sigma:.3f}: judged at {alpha:.3f} instead of {cfg.alpha}"
    else:
        status, reason = "ok", None
    crit_value = float(np.median(criterion))
    threshold = crit_value * alpha if direction == "higher" else crit_value / alpha
    return {"status": status, "reason": reason, "criterion": criterion.tolist(), "criterion_value": crit_value,
            "alpha": alpha, "threshold": threshold, "n_dropped": int((~kept).sum()), "sigma": sigma}


def learn(samples: pl.DataFrame, classes: pl.DataFrame, cfg: CriteriaConfig = CriteriaConfig(),
          progress=None) -> pl.DataFrame:
    """samples (analysis.criteria.samples.build) + classes (catalog.classify over
    "<benchmark>/<metric>") -> one row per (group, benchmark, metric)."""
    rows = []
    families = S.families(samples)
    cls = {r["name"]: r for r in classes.iter_rows(named=True)}
    for i, ((group, bench, metric), fam) in enumerate(families.items()):
        c = cls[f"{bench}/{metric}"]
        row = {"group": group, "benchmark": bench, "metric": metric, "kind": c["kind"], "direction": c["direction"],
               "unit": c["unit"], "guessed_direction": c["guessed"], "pass_value": c["pass_value"],
               "n_samples": fam.height, "n_hosts": fam["host"].n_unique(), "n_dropped": 0}
        if c["kind"] == "flag":
            row.update(status="flag", reason=f"pass/fail: pass is {c['pass_value']:g}")
        elif c["kind"] == "info":
            row.update(status="info", reason="recorded, not judged (metrics catalog)")
        elif row["n_hosts"] < cfg.min_hosts:
            row.update(status="too_few_hosts", reason=f"{row['n_hosts']} nodes, fewer than min_hosts {cfg.min_hosts}")
        else:
            row.update(learn_family(S.matrix(fam), c["direction"], cfg))
        rows.append(row)
        if progress and (i + 1) % 200 == 0:
            progress(i + 1, len(families))
    return pl.from_dicts(rows, schema=CRITERIA_SCHEMA) if rows else pl.DataFrame(schema=CRITERIA_SCHEMA)
