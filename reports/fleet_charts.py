"""Altair chart builders for the fleet report: every cluster in every chart, one colour per cluster throughout
(the same domain in each chart, so rsc1 is the same colour everywhere). Frames come from reports/fleet.py, a
``cluster`` column beside the cluster report's own columns; specs are built as reports/charts.py builds them."""
from __future__ import annotations

import altair as alt
import polars as pl

from reports.charts import CAPACITY_PARTS, SIZE_TITLE, WIDTH, named_data, vega_spec, whole_and_lost


def _colour(clusters: list[str]) -> alt.Color:
    return alt.Color("cluster:N", title="cluster", scale=alt.Scale(domain=clusters, scheme="category10"))


def rates_by_cause(rates: pl.DataFrame, clusters: list[str]) -> dict:
    """Failures per 1,000 node-days per cause, a bar per cluster within each cause."""
    chart = alt.Chart(named_data("rates")).mark_bar().encode(
        y=alt.Y("cause_label:N", title=None), yOffset=alt.YOffset("cluster:N", sort=clusters),
        x=alt.X("rate:Q", title="infrastructure failures per 1,000 node-days"), color=_colour(clusters),
        tooltip=["cluster:N", alt.Tooltip("cause_label:N", title="cause"), alt.Tooltip("cause:N", title="id"),
                 alt.Tooltip("rate:Q", format=".2f"), "failures:Q"])
    return vega_spec(chart, rates=rates)


def _spread(frame: pl.DataFrame, clusters: list[str], field: str, step: float = 1.08) -> pl.DataFrame:
    """``x``: ``field`` nudged apart per cluster on the log axis, so one size's confidence intervals do not hide
    each other; tooltips keep the true size."""
    mid = (len(clusters) - 1) / 2
    nudge = {c: step ** (i - mid) for i, c in enumerate(clusters)}
    return frame.with_columns(x=pl.col(field) * pl.col("cluster").replace_strict(nudge, return_dtype=pl.Float64))


def _log_span(low: float, high: float, margin: float = 1.5) -> alt.Scale:
    """A log scale over the data with a margin: a log scale's nice rounding would add empty decades."""
    return alt.Scale(type="log", domain=[low / margin, high * margin], nice=False)


def mttf_by_size(mttf: pl.DataFrame, clusters: list[str]) -> dict:
    """Measured MTTF per job-size bucket with its 90% confidence interval, per cluster."""
    mttf = _spread(mttf, clusters, "bucket_gpus")
    x = alt.X("x:Q", scale=_log_span(mttf["x"].min(), mttf["x"].max()), title=SIZE_TITLE)
    tips = ["cluster:N", alt.Tooltip("bucket_gpus:Q", title="GPUs (bucket)"), "failures:Q",
            alt.Tooltip("mttf_hours:Q", format=".1f"), alt.Tooltip("mttf_ci_low_hours:Q", format=".1f", title="90% CI from"),
            alt.Tooltip("mttf_ci_high_hours:Q", format=".1f", title="to")]
    bars = alt.Chart(named_data("mttf")).mark_rule().encode(
        x=x, y=alt.Y("mttf_ci_low_hours:Q", title="MTTF (hours)",
                     scale=_log_span(mttf["mttf_ci_low_hours"].min(), mttf["mttf_ci_high_hours"].max())),
        y2="mttf_ci_high_hours:Q", color=_colour(clusters))
    points = alt.Chart(named_data("mttf")).mark_point(filled=True, size=60).encode(
        x=x, y="mttf_hours:Q", color=_colour(clusters), tooltip=tips)
    return vega_spec(alt.layer(bars, points).properties(height=280), mttf=mttf)


def ettr_by_size(medians: pl.DataFrame, clusters: list[str]) -> dict:
    """The median measured ETTR of each job-size bucket's runs (the cluster report's dark ticks), per cluster."""
    chart = alt.Chart(named_data("ettr")).mark_line(point=alt.OverlayMarkDef(size=50)).encode(
        x=alt.X("size:Q", scale=_log_span(medians["size"].min(), medians["size"].max()), title=SIZE_TITLE),
        y=alt.Y("median_ettr:Q", scale=alt.Scale(domain=[0, 1]), title="median ETTR of the runs"),
        color=_colour(clusters),
        tooltip=["cluster:N", alt.Tooltip("gpus:N", title="GPUs"), "runs:Q",
                 alt.Tooltip("median_ettr:Q", title="median ETTR", format=".3f")])
    return vega_spec(chart.properties(height=240), ettr=medians)


def capacity_split(split: pl.DataFrame, clusters: list[str]) -> dict:
    """Each cluster's capacity as one bar of shares that add up to 100%; beside it the losses alone on their own
    scale (a few percent: a sliver in the whole bar). Colour is the part here: the cluster is the row."""
    names = [n for _, n in CAPACITY_PARTS]
    encoding = dict(y=alt.Y("cluster:N", sort=clusters, title=None),
                    color=alt.Color("part:N", title=None, sort=names), order="order:Q",
                    tooltip=["cluster:N", "part:N", alt.Tooltip("share:Q", format=".2%"),
                             alt.Tooltip("gpu_hours:Q", format=",.0f", title="GPU-hours")])
    whole, lost = whole_and_lost("bar", "x", encoding, ".2%")
    rows = alt.Step(26)
    chart = alt.vconcat(whole.properties(width=WIDTH - 80, height=rows), lost.properties(width=WIDTH - 80, height=rows),
                        data=named_data("capacity"), spacing=14)
    return vega_spec(chart, capacity=split)
