"""The report's first screen (reports/headline.py) on numbers made here: shares that add up as printed, the warm-up
and partial days left out of the comparison, and the top actions by share of the loss."""
from __future__ import annotations

from datetime import date, datetime, timedelta

import polars as pl

from reports import headline


def test_rounded_shares_add_up_as_printed():
    # 0.534% and 0.039% of the issue, beside the rest: printed to a tenth, the parts still sum to 100.0
    parts = headline.rounded_shares({"productive": 76.114, "infrastructure": 0.534, "second_order": 0.039,
                                     "user_failures": 0.51, "preemptions": 0.2, "stragglers": 0.0, "idle": 22.603})
    assert round(sum(parts.values()), 1) == 100.0 and parts["stragglers"] == 0.0
    assert all(abs(parts[k] - v) <= 0.1 for k, v in {"productive": 76.114, "infrastructure": 0.534}.items())
    assert headline.rounded_shares({"a": 1, "b": 1, "c": 1}) in ({"a": 33.4, "b": 33.3, "c": 33.3},
                                                               {"a": 33.3, "b": 33.3, "c": 33.4},
                                                               {"a": 33.3, "b": 33.4, "c": 33.3})


def test_warm_up_and_partial_days_are_not_compared():
    days = [datetime(2024, 3, 1) + timedelta(days=i) for i in range(17)]
    scheduled = [300, 900, 2000] + [2400] * 14  # filling up, then steady
    goodput = [0.3, 0.5, 0.8] + [0.85] * 6 + [0.9] * 8
    daily = pl.DataFrame({"day": days, "goodput": goodput, "scheduled_gpu_hours": [float(s) for s in scheduled]})
    marked = headline.marked_days(daily, date(2024, 3, 1), date(2024, 3, 17))
    assert marked.filter(pl.col("kind") != "full").select("day", "kind").rows() == [
        (datetime(2024, 3, 1), "partial"), (datetime(2024, 3, 2), "warm-up"), (datetime(2024, 3, 17), "partial")]
    c = headline.change(marked)
    assert c["compared"] and abs(c["now"] - 0.9) < 1e-9 and abs(c["before"] - (0.8 + 6 * 0.85) / 7) < 1e-9
    short = headline.change(marked.head(10))
    assert not short["compared"] and "two periods of 7" in short["why"]


def test_top_actions_name_the_node_its_cause_and_its_share():
    nodes = [{"host": "gpu0023", "lost_gpu_hours": 485.0, "top_cause": "infiniband_link", "causes": "infiniband_link, nccl",
              "failures_blamed": 11, "state_now": "DRAIN: check_hw_ib"},
             {"host": "gpu0036", "lost_gpu_hours": 96.0, "top_cause": "gpu_memory", "causes": "gpu_memory",
              "failures_blamed": 1, "state_now": None},
             {"host": "gpu0099", "lost_gpu_hours": 0.0, "top_cause": None, "causes": None, "failures_blamed": 0,
              "state_now": None}]
    actions = [{"host": "gpu0023", "action": "drain_now", "suggested_component": "optics"}]
    top = headline.top_actions(nodes, actions, 689.0, {"infiniband_link": "InfiniBand link"})
    assert [a["host"] for a in top] == ["gpu0023", "gpu0036"]
    assert top[0]["cause_words"] == "InfiniBand link" and abs(top[0]["share"] - 485 / 689) < 1e-12
    assert (top[0]["state"], top[0]["todo"]) == ("drained", "drain it now; look at its optics")
    assert (top[1]["state"], top[1]["todo"]) == ("in service", "no action listed")
    assert headline.top_actions(nodes, actions, 0.0, {}) == []
