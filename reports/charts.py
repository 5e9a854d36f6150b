"""Altair chart builders for the reliability report. Each takes plain frames
(from sql/report/) and returns a Vega-Lite spec as a dict.

The page must stay small and quick at a year of history: no chart carries one
row per job or per run. Runs are binned (size bucket x ETTR band), daily series
become weekly or monthly means once they would not fit the width anyway, and
each frame is attached once, as a named top-level dataset the layers refer to
(added after Altair's schema validation, which is slow on data)."""
from __future__ import annotations

import altair as alt
import polars as pl

from analysis.derive import ettr as E
from analysis.derive.taxonomy import cause_label

WIDTH = 620
TARGET_ETTR = 0.9
MAX_POINTS = 200  # per time series: more would be narrower than a pixel pair at WIDTH
ETTR_STEP = 0.025  # ETTR band of one bin in the runs chart
# coarser periods for long histories: polars truncate unit, its length in days, label
PERIODS = (("1d", 1, "day"), ("1w", 7, "week starting"), ("1mo", 31, "month"), ("1q", 92, "quarter"),
           ("1y", 366, "year"))
# every date on an axis or in a tooltip: the tables' ISO format, in UTC (the data's days are UTC days;
# a browser's local time would shift them by a day west of Greenwich)
DATE_FORMAT = "%Y-%m-%d"
SIZE_TITLE = "job size (GPUs, bucket)"  # the report states the bucket rule once (size_bucket, sql/schema/warehouse.sql)


def _values(frame: pl.DataFrame) -> list[dict]:
    """Rows as JSON-ready dicts: dates as ISO strings, floats to 4 significant
    digits (the charts show 3), NaN as null (JSON has no NaN)."""
    out = frame.with_columns(
        *(pl.col(c).dt.strftime("%Y-%m-%d") for c, t in frame.schema.items() if t.is_temporal()),
        *(pl.col(c).fill_nan(None).round_sig_figs(4) for c, t in frame.schema.items() if t.is_float()))
    return out.to_dicts()


def vega_spec(chart: alt.TopLevelMixin, **datasets: pl.DataFrame) -> dict:
    """The spec with each named frame attached once, under top-level `datasets`."""
    if not isinstance(chart, alt.VConcatChart):  # panels of a concatenation carry their own width
        chart = chart.properties(width=WIDTH)
    spec = chart.configure_view(stroke=None).to_dict()
    spec["datasets"] = {name: _values(frame) for name, frame in datasets.items()}
    return spec


def named_data(name: str) -> alt.NamedData:
    return alt.NamedData(name=name)


def _days(field: str = "day", label: str | None = None) -> alt.X:
    """A date axis in the report's one format (a utc scale formats its labels in UTC; Vega-Lite drops the
    format if formatType is given as well)."""
    return alt.X(f"{field}:T", scale=alt.Scale(type="utc"), axis=alt.Axis(format=DATE_FORMAT),
                 title=None if label in (None, "day") else f"{label} (mean of its days)")


def _day_tip(field: str = "day", title: str = "day") -> alt.Tooltip:
    return alt.Tooltip(f"{field}:T", title=title, format=DATE_FORMAT, formatType="utc")


def _per_period(frame: pl.DataFrame, values: list[str], by: tuple[str, ...] = ()) -> tuple[pl.DataFrame, str]:
    """``frame`` (one row per day and ``by``) as means over the shortest period
    that keeps the series within MAX_POINTS; and what one point stands for."""
    span = (frame["day"].max() - frame["day"].min()).days + 1 if frame.height else 1
    every, label = next(((e, lab) for e, days, lab in PERIODS if span / days <= MAX_POINTS), PERIODS[-1][::2])
    if every == "1d":
        return frame.select("day", *by, *values), label
    out = frame.group_by(pl.col("day").dt.truncate(every), *by).agg(pl.col(values).mean())
    return out.sort("day", *by), label


def status_breakdown(status: pl.DataFrame) -> dict:
    long = status.select("state", pl.col("instance_share").alias("by job count"),
                         pl.col("gpu_hour_share").alias("by GPU-hours")).unpivot(index="state", variable_name="measure",
                                                                                 value_name="share")
    chart = alt.Chart(named_data("status")).mark_bar().encode(
        y=alt.Y("state:N", sort="-x", title=None), x=alt.X("share:Q", axis=alt.Axis(format="%"), title="share"),
        color=alt.Color("measure:N", title=None), yOffset="measure:N",
        tooltip=["state:N", "measure:N", alt.Tooltip("share:Q", format=".1%")])
    return vega_spec(chart.properties(height=alt.Step(11)), status=long)


def goodput_trend(daily: pl.DataFrame) -> dict:
    points, label = _per_period(daily, ["goodput"])
    chart = alt.Chart(named_data("goodput")).mark_line(point=True).encode(
        x=_days(label=label), y=alt.Y("goodput:Q", axis=alt.Axis(format="%"), title="goodput"),
        tooltip=[_day_tip(title=label), alt.Tooltip("goodput:Q", format=".1%")])
    return vega_spec(chart.properties(height=180), goodput=points)


CAPACITY_PARTS = (("productive", "productive work"), ("infrastructure", "lost to infrastructure failures"),
                  ("second_order", "lost to second-order preemptions"), ("user_failures", "lost to user failures"),
                  ("preemptions", "lost to preemptions"), ("stragglers", "lost waiting for stragglers"), ("idle", "idle"))


LOSS_PARTS = ("infrastructure", "second_order", "user_failures", "preemptions", "stragglers")  # the slivers the lower panel zooms on


def whole_and_lost(mark: str, axis: str, encoding: dict, lost_format: str) -> tuple[alt.Chart, alt.Chart]:
    """The capacity parts stacked to 100% along ``axis`` ("x": a bar per cluster, "y": an area over days), and
    the loss parts alone on their own scale below (a few percent of capacity: a sliver in the whole)."""
    channel = {"x": alt.X, "y": alt.Y}[axis]

    def chart(stack: str, fmt: str, title: str) -> alt.Chart:
        return getattr(alt.Chart(), f"mark_{mark}")().encode(
            **{axis: channel("share:Q", stack=stack, axis=alt.Axis(format=fmt), title=title)}, **encoding)

    lost = chart("zero", lost_format, "lost (share of capacity)").transform_filter(
        alt.FieldOneOfPredicate(field="part", oneOf=[dict(CAPACITY_PARTS)[c] for c in LOSS_PARTS]))
    return chart("normalize", "%", "share of GPU capacity"), lost


def capacity_split(split: pl.DataFrame) -> dict:
    """Each day's capacity as stacked shares that add up to 100%; below it, the losses alone on their own
    scale (a few percent of capacity: a sliver in the upper panel)."""
    points, label = _per_period(split, ["capacity", *[c for c, _ in CAPACITY_PARTS]])
    names = dict(CAPACITY_PARTS)
    long = points.unpivot(index=["day", "capacity"], on=list(names), variable_name="part", value_name="gpu_hours")
    long = long.with_columns(share=pl.col("gpu_hours") / pl.col("capacity"),
                             part=pl.col("part").replace_strict(names), order=pl.col("part").replace_strict(
                                 {c: i for i, (c, _) in enumerate(CAPACITY_PARTS)}, return_dtype=pl.Int32))
    encoding = dict(x=_days(label=label), color=alt.Color("part:N", title=None, sort=[n for _, n in CAPACITY_PARTS]),
                    order="order:Q", tooltip=[_day_tip(title=label), "part:N", alt.Tooltip("share:Q", format=".2%"),
                                              alt.Tooltip("gpu_hours:Q", format=",.0f", title="GPU-hours")])
    whole, lost = whole_and_lost("area", "y", encoding, ".1%")
    chart = alt.vconcat(whole.properties(width=WIDTH, height=220), lost.properties(width=WIDTH, height=120),
                        data=named_data("capacity"), spacing=12)
    return vega_spec(chart, capacity=long.drop("capacity"))


def _labelled(frame: pl.DataFrame, labels: dict[str, str], *cols: str) -> pl.DataFrame:
    """A `<col>_label` beside each cause id column: legends and axes show words, tooltips keep the id."""
    words = {v: cause_label(v, labels) for c in cols for v in frame[c].drop_nulls().unique()}
    return frame.with_columns(*(pl.col(c).replace_strict(words, default=None, return_dtype=pl.Utf8).alias(f"{c}_label")
                                for c in cols))


def failure_rate_over_time(rates: pl.DataFrame, checks: pl.DataFrame, labels: dict[str, str] | None = None) -> dict:
    points, label = _per_period(rates, ["rate"], by=("cause",))
    points = _labelled(points, labels or {}, "cause")
    lines = alt.Chart(named_data("rates")).mark_line().encode(
        x=_days(label=label), y=alt.Y("rate:Q", title="failures per 1,000 node-days (30-day rolling)"),
        color=alt.Color("cause_label:N", title="cause"),
        tooltip=[_day_tip(title=label), alt.Tooltip("cause_label:N", title="cause"),
                 alt.Tooltip("cause:N", title="id"), alt.Tooltip("rate:Q", format=".2f")])
    marks = alt.Chart(named_data("checks")).mark_rule(strokeDash=[4, 3], color="#555").encode(
        x=_days("first_seen"), tooltip=["health_check:N", _day_tip("first_seen", "first seen")])
    labels = marks.mark_text(align="left", dx=3, dy=-110, fontSize=10, color="#555").encode(text="health_check:N")
    return vega_spec(alt.layer(lines, marks, labels).properties(height=260), rates=points,
                 checks=checks.select("health_check", "first_seen"))


def mttf_by_size(mttf: pl.DataFrame, projection: pl.DataFrame) -> dict:
    measured = mttf.filter(pl.col("mttf_hours").is_not_null()).select(
        "bucket_gpus", "failures", "mttf_hours", "mttf_ci_low_hours", "mttf_ci_high_hours")
    x = alt.X("bucket_gpus:Q", scale=alt.Scale(type="log"), title=SIZE_TITLE)
    points = alt.Chart(named_data("mttf")).mark_point(filled=True, size=60).encode(
        x=x, y=alt.Y("mttf_hours:Q", scale=alt.Scale(type="log"), title="MTTF (hours)"),
        tooltip=["bucket_gpus:Q", "failures:Q", alt.Tooltip("mttf_hours:Q", format=".1f")])
    bars = alt.Chart(named_data("mttf")).mark_rule().encode(x=x, y="mttf_ci_low_hours:Q", y2="mttf_ci_high_hours:Q")
    proj = alt.Chart(named_data("projection")).mark_line(strokeDash=[5, 3], color="#d62728").encode(
        x=alt.X("gpus:Q", scale=alt.Scale(type="log")), y="projected_mttf_hours:Q",
        tooltip=["gpus:Q", alt.Tooltip("projected_mttf_hours:Q", format=".2f")])
    label = proj.transform_window(rank="rank()", sort=[alt.SortField("gpus", order="descending")]).transform_filter(
        # under the line's right end: 1/N falls to the right, so the line runs above the text, never through it
        "datum.rank == 1").mark_text(align="right", baseline="top", dx=-4, dy=8, fontSize=10, color="#d62728").encode(
        text=alt.value("projection: 1/N at the fleet's r"))
    return vega_spec(alt.layer(bars, points, proj, label).properties(height=280), mttf=measured,
                 projection=_projection_span(projection.filter(pl.col("projected_mttf_hours").is_not_null()),
                                             measured["bucket_gpus"].max() if measured.height else None))


def _projection_span(projection: pl.DataFrame, largest: int | None, multiple: int = 16) -> pl.DataFrame:
    """The projection up to a sensible multiple of the largest job measured (the axis follows the data),
    and at least its first two points."""
    if largest is None or projection.height <= 2:
        return projection
    kept = projection.filter(pl.col("gpus") <= multiple * largest)
    return kept if kept.height >= 2 else projection.head(2)


def run_cells(runs: pl.DataFrame) -> tuple[pl.DataFrame, pl.DataFrame]:
    """Runs binned by size bucket (``size``: the report's one bucket, size_bucket in
    sql/schema/warehouse.sql) and ETTR band: how many runs, their median length and failures;
    and per size bucket the runs' median ETTR. Bounded by buckets x bands, whatever the history."""
    binned = runs.filter(pl.col("ettr").is_not_null()).with_columns(
        band=((pl.col("ettr").clip(0, 1) / ETTR_STEP).floor().clip(0, round(1 / ETTR_STEP) - 1) * ETTR_STEP))
    gpus = pl.format("{}–{}", pl.col("size") - 7, "size")  # a bucket holds the sizes above the one below
    cells = binned.group_by("size", "band").agg(
        runs=pl.len(), median_hours=pl.col("scheduled_hours").median(), failures=pl.col("failures").sum(),
    ).with_columns(gpus=gpus, ettr=pl.col("band") + ETTR_STEP / 2,
                   band=pl.format("{}–{}", pl.col("band").round(3), (pl.col("band") + ETTR_STEP).round(3)))
    medians = binned.group_by("size").agg(runs=pl.len(), median_ettr=pl.col("ettr").median()).with_columns(gpus=gpus)
    return cells.sort("size", "ettr"), medians.sort("size")


def ettr_by_size(runs: pl.DataFrame, r_per_node_day: float, u0_h: float, dt_h: float, q_h: float = 0.0,
                 runtime_h: float | None = None, multiple: int = 16, gpus_per_node: int = E.GPUS_PER_NODE) -> dict:
    """Runs binned by size and ETTR band against the expected ETTR, drawn up to ``multiple`` times the
    largest run (the axis follows the data): eq. 1 where valid, Monte Carlo beyond (dashed)."""
    cells, medians = run_cells(runs)
    largest = cells["size"].max() or 64
    sizes = [8 * 2 ** k for k in range(20) if 8 * 2 ** k <= multiple * largest]
    curve = pl.DataFrame(E.expected_ettr_curve(sizes, r_per_node_day, u0_h, dt_h, q_h, runtime_h,
                                               gpus_per_node=gpus_per_node),
                         schema={"n_gpus": pl.Int64, "expected": pl.Float64, "method": pl.Utf8})
    # the curve's span with a margin: a log scale's nice rounding would add empty decades
    scale = alt.Scale(type="log", domain=[sizes[0] / 1.5, sizes[-1] * 1.5], nice=False)
    x = alt.X("size:Q", scale=scale, title=SIZE_TITLE)
    bins = alt.Chart(named_data("runs")).mark_circle(opacity=0.8).encode(
        x=x, y=alt.Y("ettr:Q", scale=alt.Scale(domain=[0, 1]), title="ETTR"),
        size=alt.Size("runs:Q", title="runs", scale=alt.Scale(range=[12, 420]), legend=alt.Legend(format=",d", tickMinStep=1)),
        color=alt.Color("median_hours:Q", title="median length (h)", scale=alt.Scale(type="log", scheme="viridis")),
        tooltip=[alt.Tooltip("gpus:N", title="GPUs"), alt.Tooltip("band:N", title="ETTR"), "runs:Q",
                 alt.Tooltip("median_hours:Q", title="median length (h)", format=".1f"), "failures:Q"])
    median = alt.Chart(named_data("medians")).mark_tick(color="#222", thickness=2, size=22).encode(
        x=alt.X("size:Q", scale=scale), y="median_ettr:Q",
        tooltip=[alt.Tooltip("gpus:N", title="GPUs"), "runs:Q", alt.Tooltip("median_ettr:Q", title="median ETTR", format=".3f")])
    present = set(curve["method"])
    methods = [(m, d) for m, d in (("closed form", [1, 0]), ("Monte Carlo", [5, 3]), ("no progress", [1, 3])) if m in present]
    # one line through every point, dashed where simulated: the segments share their boundary points
    line = alt.Chart(named_data("expected")).mark_line(color="#d62728", point=alt.OverlayMarkDef(size=14, color="#d62728")).encode(
        x=alt.X("n_gpus:Q", scale=scale), y="expected:Q",
        strokeDash=alt.StrokeDash("method:N", title="expected ETTR",
                                  scale=alt.Scale(domain=[m for m, _ in methods], range=[d for _, d in methods])),
        tooltip=["n_gpus:Q", alt.Tooltip("expected:Q", format=".3f"), "method:N"])
    return vega_spec(alt.layer(bins, median, line).properties(height=260),
                 runs=cells, medians=medians, expected=_joined_segments(curve))


def _joined_segments(curve: pl.DataFrame) -> pl.DataFrame:
    """Each method's points plus the first point of the next method: strokeDash splits a line per
    method, and without the shared point the segments would not meet."""
    joins = curve.with_columns(previous=pl.col("method").shift(1)).filter(
        pl.col("previous").is_not_null() & (pl.col("previous") != pl.col("method")))
    joins = joins.with_columns(method=pl.col("previous")).drop("previous")
    return pl.concat([curve, joins]).sort("n_gpus", "method")


SWEEP_RATES = (0.5, 1, 2, 2.34, 4, 6.5, 10, 15)  # per 1,000 node-days: Meta's Fig. 10 range, RSC-2 to RSC-1


def sweep_axes(r_per_1000: float, largest_gpus: int | None, multiple: int = 16) -> tuple[list[float], list[int]]:
    """The what-if grid: Meta's range of rates stretched to hold this cluster's, and sizes from the
    largest job measured to ``multiple`` times it (by 4x); without jobs, Meta's 1,024-131,072 GPUs."""
    rates = sorted({*SWEEP_RATES, *([r_per_1000 / 2, r_per_1000, 2 * r_per_1000] if r_per_1000 > SWEEP_RATES[-1] else [])})
    start = max(8, 2 ** int(largest_gpus).bit_length() // 2) if largest_gpus else 1024
    gpus = [start * 4 ** k for k in range(9) if start * 4 ** k <= (multiple * start if largest_gpus else 131072)]
    return [round(r, 2) for r in rates], gpus


def checkpoint_sweep(r_per_1000: float, u0_h: float, largest_gpus: int | None = None,
                     gpus_per_node: int = E.GPUS_PER_NODE) -> dict:
    rates, gpus = sweep_axes(r_per_1000, largest_gpus)
    rows = E.sweep(TARGET_ETTR, rates, gpus, u0_h, gpus_per_node)
    frame = pl.DataFrame(rows).filter(pl.col("checkpoint_minutes").is_not_null())
    lines = alt.Chart(named_data("sweep")).mark_line(point=True).encode(
        x=alt.X("failures_per_1000_node_days:Q", title="failures per 1,000 node-days"),
        y=alt.Y("checkpoint_minutes:Q", scale=alt.Scale(type="log"), title=f"checkpoint interval for ETTR {TARGET_ETTR} (min)"),
        color=alt.Color("gpus:O", title="GPUs"),
        tooltip=["gpus:O", "failures_per_1000_node_days:Q", alt.Tooltip("checkpoint_minutes:Q", format=".1f")])
    here = alt.Chart(named_data("here")).mark_rule(color="#555", strokeDash=[4, 3]).encode(x="r:Q")
    return vega_spec(alt.layer(lines, here).properties(height=260), sweep=frame,
                 here=pl.DataFrame({"r": [float(r_per_1000)]}))


def loss_by_size(loss: pl.DataFrame) -> dict:
    chart = alt.Chart(named_data("loss")).mark_bar().encode(
        x=alt.X("bucket_gpus:O", sort="ascending", title=SIZE_TITLE), y=alt.Y("lost_gpu_hours:Q", title="lost GPU-hours"),
        color=alt.Color("kind:N", title=None),
        tooltip=["bucket_gpus:O", "kind:N", alt.Tooltip("lost_gpu_hours:Q", format=",.0f"), "instances:Q"])
    return vega_spec(chart.properties(height=240), loss=loss)


def cooccurrence(co: pl.DataFrame, labels: dict[str, str] | None = None) -> dict:
    """Which causes fire together: shares as colour, the failure counts written in the cells."""
    base = alt.Chart(named_data("cooccurrence")).encode(
        x=alt.X("cause_b_label:N", title="also present"), y=alt.Y("cause_a_label:N", title="failures showing"))
    cells = base.mark_rect().encode(
        color=alt.Color("share_of_a:Q", title="share", scale=alt.Scale(scheme="blues", domain=[0, 1])),
        tooltip=[alt.Tooltip("cause_a:N", title="cause (id)"), alt.Tooltip("cause_b:N", title="with (id)"),
                 "failures_with_both:Q", alt.Tooltip("share_of_a:Q", format=".0%")])
    counts = base.mark_text(fontSize=10).encode(
        text="failures_with_both:Q",
        color=alt.condition("datum.share_of_a > 0.5", alt.value("white"), alt.value("#222")))
    return vega_spec(alt.layer(cells, counts).properties(height=alt.Step(22)),
                 cooccurrence=_labelled(co, labels or {}, "cause_a", "cause_b"))


def risk_distribution(risk: pl.DataFrame) -> dict:
    """Nodes by Cox-Time's 7-day incident probability, in 5-point bins (one bar per bin, not per node)."""
    bins = (risk.with_columns(lo=(pl.col("p_incident") * 20).floor().clip(0, 19) / 20)
            .group_by("lo").agg(nodes=pl.len()).with_columns(hi=pl.col("lo") + 0.05).sort("lo"))
    chart = alt.Chart(named_data("risk")).mark_bar().encode(
        x=alt.X("lo:Q", bin="binned", title="probability of an incident within 7 days (Cox-Time)",
                scale=alt.Scale(domain=[0, 1]), axis=alt.Axis(format=".0%")),
        x2="hi:Q", y=alt.Y("nodes:Q", title="nodes"),
        tooltip=[alt.Tooltip("lo:Q", format=".0%", title="from"), alt.Tooltip("hi:Q", format=".0%", title="to"),
                 "nodes:Q"])
    return vega_spec(chart.properties(height=200), risk=bins)
