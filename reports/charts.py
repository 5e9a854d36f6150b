"""Altair chart builders for the reliability report. Each takes plain frames
(from sql/report_*.sql) and returns a Vega-Lite spec as a dict."""
from __future__ import annotations

import altair as alt
import polars as pl

from analysis import ettr as E

WIDTH = 620
TARGET_ETTR = 0.9


def _values(frame: pl.DataFrame) -> list[dict]:
    """Rows as JSON-ready dicts: dates as ISO strings."""
    out = frame.with_columns(pl.col(c).dt.strftime("%Y-%m-%d") for c, t in frame.schema.items()
                             if t in (pl.Date, pl.Datetime) or isinstance(t, pl.Datetime))
    return out.to_dicts()


def _spec(chart: alt.TopLevelMixin) -> dict:
    return chart.properties(width=WIDTH).configure_view(stroke=None).to_dict()


def status_breakdown(status: pl.DataFrame) -> dict:
    long = status.select("state", pl.col("instance_share").alias("by job count"),
                         pl.col("gpu_hour_share").alias("by GPU-hours")).unpivot(index="state", variable_name="measure",
                                                                                 value_name="share")
    chart = alt.Chart(alt.Data(values=_values(long))).mark_bar().encode(
        y=alt.Y("state:N", sort="-x", title=None), x=alt.X("share:Q", axis=alt.Axis(format="%"), title="share"),
        color=alt.Color("measure:N", title=None), yOffset="measure:N",
        tooltip=["state:N", "measure:N", alt.Tooltip("share:Q", format=".1%")])
    return _spec(chart.properties(height=alt.Step(11)))


def goodput_trend(daily: pl.DataFrame) -> dict:
    chart = alt.Chart(alt.Data(values=_values(daily))).mark_line(point=True).encode(
        x=alt.X("day:T", title=None), y=alt.Y("goodput:Q", axis=alt.Axis(format="%"), title="goodput"),
        tooltip=["day:T", alt.Tooltip("goodput:Q", format=".1%")])
    return _spec(chart.properties(height=180))


def failure_rate_over_time(rates: pl.DataFrame, checks: pl.DataFrame) -> dict:
    lines = alt.Chart(alt.Data(values=_values(rates))).mark_line().encode(
        x=alt.X("day:T", title=None), y=alt.Y("rate:Q", title="failures per 1,000 node-days (30-day rolling)"),
        color=alt.Color("cause:N", title="cause"), tooltip=["day:T", "cause:N", alt.Tooltip("rate:Q", format=".2f")])
    marks = alt.Chart(alt.Data(values=_values(checks))).mark_rule(strokeDash=[4, 3], color="#555").encode(
        x="first_seen:T", tooltip=["health_check:N", "first_seen:T"])
    labels = marks.mark_text(align="left", dx=3, dy=-110, fontSize=10, color="#555").encode(text="health_check:N")
    return _spec(alt.layer(lines, marks, labels).properties(height=260))


def mttf_by_size(mttf: pl.DataFrame, projection: pl.DataFrame) -> dict:
    measured = mttf.filter(pl.col("mttf_hours").is_not_null())
    base = alt.Chart(alt.Data(values=_values(measured)))
    x = alt.X("bucket_gpus:Q", scale=alt.Scale(type="log"), title="job size (GPUs)")
    points = base.mark_point(filled=True, size=60).encode(
        x=x, y=alt.Y("mttf_hours:Q", scale=alt.Scale(type="log"), title="MTTF (hours)"),
        tooltip=["bucket_gpus:Q", "failures:Q", alt.Tooltip("mttf_hours:Q", format=".1f")])
    bars = base.mark_rule().encode(x=x, y="mttf_ci_low_hours:Q", y2="mttf_ci_high_hours:Q")
    proj = alt.Chart(alt.Data(values=_values(projection.filter(pl.col("projected_mttf_hours").is_not_null())))).mark_line(
        strokeDash=[5, 3], color="#d62728").encode(
        x=alt.X("gpus:Q", scale=alt.Scale(type="log")), y="projected_mttf_hours:Q",
        tooltip=["gpus:Q", alt.Tooltip("projected_mttf_hours:Q", format=".2f")])
    return _spec(alt.layer(bars, points, proj).properties(height=280))


def ettr_by_size(runs: pl.DataFrame, r_per_node_day: float, u0_h: float, dt_h: float, q_h: float = 0.0,
                 runtime_h: float | None = None) -> dict:
    sizes = [8 * 2 ** k for k in range(15)]
    curve = pl.DataFrame({"n_gpus": sizes, "expected": [E.expected_ettr(g / 8, r_per_node_day, u0_h, dt_h, q_h, runtime_h)
                                                        for g in sizes]})
    x = alt.X("n_gpus:Q", scale=alt.Scale(type="log"), title="job run size (GPUs)")
    points = alt.Chart(alt.Data(values=_values(runs))).mark_circle(size=30, opacity=0.5).encode(
        x=x, y=alt.Y("ettr:Q", scale=alt.Scale(domain=[0, 1]), title="ETTR"),
        tooltip=["run_id:N", "n_gpus:Q", alt.Tooltip("ettr:Q", format=".3f"), "failures:Q"])
    line = alt.Chart(alt.Data(values=_values(curve))).mark_line(color="#d62728").encode(
        x=x, y="expected:Q", tooltip=["n_gpus:Q", alt.Tooltip("expected:Q", format=".3f")])
    return _spec(alt.layer(points, line).properties(height=260))


def checkpoint_sweep(r_per_1000: float, u0_h: float) -> dict:
    rates = [0.5, 1, 2, 2.34, 4, 6.5, 10, 15]
    rows = E.sweep(TARGET_ETTR, rates, [1024, 4096, 16384, 131072], u0_h)
    frame = pl.DataFrame(rows).filter(pl.col("checkpoint_minutes").is_not_null())
    lines = alt.Chart(alt.Data(values=_values(frame))).mark_line(point=True).encode(
        x=alt.X("failures_per_1000_node_days:Q", title="failures per 1,000 node-days"),
        y=alt.Y("checkpoint_minutes:Q", scale=alt.Scale(type="log"), title=f"checkpoint interval for ETTR {TARGET_ETTR} (min)"),
        color=alt.Color("gpus:O", title="GPUs"),
        tooltip=["gpus:O", "failures_per_1000_node_days:Q", alt.Tooltip("checkpoint_minutes:Q", format=".1f")])
    here = alt.Chart(alt.Data(values=[{"r": r_per_1000}])).mark_rule(color="#555", strokeDash=[4, 3]).encode(x="r:Q")
    return _spec(alt.layer(lines, here).properties(height=260))


def loss_by_size(loss: pl.DataFrame) -> dict:
    chart = alt.Chart(alt.Data(values=_values(loss))).mark_bar().encode(
        x=alt.X("bucket_gpus:O", title="job size (GPUs)"), y=alt.Y("lost_gpu_hours:Q", title="lost GPU-hours"),
        color=alt.Color("kind:N", title=None),
        tooltip=["bucket_gpus:O", "kind:N", alt.Tooltip("lost_gpu_hours:Q", format=",.0f"), "instances:Q"])
    return _spec(chart.properties(height=240))


def cooccurrence(co: pl.DataFrame) -> dict:
    chart = alt.Chart(alt.Data(values=_values(co))).mark_rect().encode(
        x=alt.X("cause_b:N", title="also present"), y=alt.Y("cause_a:N", title="failures showing"),
        color=alt.Color("share_of_a:Q", title="share", scale=alt.Scale(scheme="blues", domain=[0, 1])),
        tooltip=["cause_a:N", "cause_b:N", "failures_with_both:Q", alt.Tooltip("share_of_a:Q", format=".0%")])
    return _spec(chart.properties(height=alt.Step(22)))
