"""The report's first screen (docs/operations.md#the-reliability-report): where the capacity went, as shares that add
up as printed; the one to three things to do, each with its share of the loss; and what changed since the previous
period, partial and warm-up days marked and left out of the comparison."""
from __future__ import annotations

import math
from datetime import date

import polars as pl

from analysis.derive.taxonomy import cause_label
from reports import charts

TOP_ACTIONS = 3
PERIOD_DAYS = 7  # the goodput card's window, and the one before it
WARM_UP_SHARE = 0.5  # a day scheduling less than this share of the median day's GPU-hours, before the first that
# schedules more, is the cluster filling up (a simulated cluster's first days, a new cluster's first jobs)
# the split the headline prints: the capacity parts grouped as a reader decides on them
LOSS_GROUPS = (("productive", ("productive",)), ("failures", ("infrastructure", "user_failures")),
               ("preemptions", ("second_order", "preemptions")), ("stragglers", ("stragglers",)), ("idle", ("idle",)))
ACTION_WORDS = {"drain_now": "drain it now", "drain_after_job": "drain it after its job", "watch": "watch it"}


def rounded_shares(values: dict[str, float], digits: int = 1) -> dict[str, float]:
    """Percentages of the values' sum rounded to ``digits`` so that the printed parts add up to the printed whole
    (100%): the largest remainders get the last units. A part that is 0 stays 0."""
    total = sum(values.values())
    if not total:
        return {k: 0.0 for k in values}
    unit = 10 ** digits
    exact = {k: 100 * unit * v / total for k, v in values.items()}
    floors = {k: math.floor(x) for k, x in exact.items()}
    short = 100 * unit - sum(floors.values())
    for k in sorted(exact, key=lambda k: (floors[k] - exact[k], k))[:short]:
        floors[k] += 1
    return {k: floors[k] / unit for k in values}


def loss_split(capacity: dict | None) -> dict | None:
    """The capacity split grouped (productive, failures, preemptions, stragglers, idle) and each group's parts, as
    percentages that add up as printed; win_back (infrastructure + second-order) is the sum of its printed parts."""
    if not capacity:
        return None
    parts = rounded_shares({k: capacity[k] for k, _ in charts.CAPACITY_PARTS})
    groups = [{"key": g, "share": round(sum(parts[k] for k in keys), 1),
               "parts": [{"key": k, "name": dict(charts.CAPACITY_PARTS)[k], "share": parts[k]} for k in keys]}
              for g, keys in LOSS_GROUPS if g != "stragglers" or capacity.get("stragglers")]
    lost = round(sum(g["share"] for g in groups if g["key"] not in ("productive", "idle")), 1)
    return {"groups": groups, "parts": parts, "lost": lost, "gpu_hours": capacity["gpu_hours"], "days": capacity["days"],
            "win_back": round(parts["infrastructure"] + parts["second_order"], 1)}


def top_actions(top_nodes: list[dict], actions: list[dict], infra_lost: float | None,
                labels: dict[str, str]) -> list[dict]:
    """The nodes that cost the most infrastructure loss, with their share of it, their causes in words, what
    Slurm has them as now and what goodput says to do (node_actions); the first TOP_ACTIONS with any loss."""
    if not infra_lost:
        return []
    said = {a["host"]: a for a in actions}
    out = []
    for n in top_nodes:
        if not n["lost_gpu_hours"]:
            continue
        a = said.get(n["host"], {})
        causes = [n["top_cause"]] if n.get("top_cause") else [c for c in (n.get("causes") or "").split(", ") if c]
        state = n.get("state_now") or "in service"
        drained = state.split(":")[0].upper()
        todo = ACTION_WORDS.get(a.get("action"), "no action listed")
        if a.get("suggested_component"):
            todo += f"; look at its {a['suggested_component']}"
        out.append({"host": n["host"], "share": n["lost_gpu_hours"] / infra_lost, "lost": n["lost_gpu_hours"],
                    "failures": n["failures_blamed"], "causes": causes,
                    "cause_words": ", ".join(cause_label(c, labels) for c in causes) or "cause not attributed",
                    "state": "drained" if "DRAIN" in drained else "down" if "DOWN" in drained else "in service",
                    "todo": todo, "action": a.get("action")})
        if len(out) == TOP_ACTIONS:
            break
    return out


def marked_days(daily: pl.DataFrame, first_day: date | None, last_day: date | None) -> pl.DataFrame:
    """Each day of goodput_daily with ``kind``: warm-up (before the first day that schedules WARM_UP_SHARE of the
    median day's GPU-hours), partial (the data's first and last day, which a source may cover in part), or full."""
    if daily.height == 0:
        return daily.with_columns(kind=pl.lit(None, pl.Utf8))
    scheduled = daily["scheduled_gpu_hours"]
    floor = WARM_UP_SHARE * (scheduled.median() or 0)
    filled = daily.filter(pl.col("scheduled_gpu_hours") >= floor)["day"].min()
    day = pl.col("day").cast(pl.Date)
    return daily.with_columns(kind=pl.when((day == first_day) | (day == last_day)).then(pl.lit("partial"))
                              .when(pl.col("day") < filled).then(pl.lit("warm-up")).otherwise(pl.lit("full")))


def change(daily: pl.DataFrame) -> dict:
    """Goodput over the last PERIOD_DAYS full days against the PERIOD_DAYS full days before them; not compared
    when either period has fewer full days (partial and warm-up days left out, and named)."""
    full = daily.filter(pl.col("kind") == "full").sort("day")
    skipped = daily.filter(pl.col("kind") != "full").sort("day")
    out = {"skipped": [{"day": d, "kind": k} for d, k in skipped.select("day", "kind").iter_rows()], "days": PERIOD_DAYS}
    if full.height < 2 * PERIOD_DAYS:
        out.update(compared=False, why=f"{full.height} full day{'' if full.height == 1 else 's'} of data: two periods "
                                       f"of {PERIOD_DAYS} are needed to compare")
        if full.height:
            out.update(now=full["goodput"].mean(), now_from=full["day"].min(), now_to=full["day"].max())
        return out
    now, before = full.tail(PERIOD_DAYS), full.slice(full.height - 2 * PERIOD_DAYS, PERIOD_DAYS)
    return {**out, "compared": True, "now": now["goodput"].mean(), "before": before["goodput"].mean(),
            "now_from": now["day"].min(), "now_to": now["day"].max(),
            "before_from": before["day"].min(), "before_to": before["day"].max()}


def first_screen(gathered: dict, models: dict | None, daily: pl.DataFrame, spans: tuple[date | None, date | None],
                 labels: dict[str, str]) -> dict:
    """What the headline says: the split, the top actions and the change, from what the report gathered."""
    marked = marked_days(daily, *spans)
    return {"split": loss_split(gathered.get("capacity")),
            "actions": top_actions(gathered["top_nodes"], (models or {}).get("all_actions", []),
                                   gathered["head"]["infra_lost_gpu_hours"], labels),
            "infra_lost": gathered["head"]["infra_lost_gpu_hours"],
            "change": change(marked),
            "window": PERIOD_DAYS}


