"""The asset graph, found in the assets/ modules rather than listed: its shape (asset keys, their dependencies, the
tables each declares, the checks on each) is a reviewed snapshot, and the derived steps that tests and benchmarks
run without Dagster (assets/pure_builds.py) follow its order. Which tables a step really writes: test_pipeline.py."""
from __future__ import annotations

import difflib
import json
import sys
from pathlib import Path

from assets.pure_builds import METRICS_GROUP, builds, steps
from assets.graph import found, tables_of

SNAPSHOT = Path(__file__).resolve().parent / "fixtures" / "asset_graph.json"
REGENERATE = "python -m tests.test_asset_graph"


def graph_snapshot() -> str:
    """The graph as sorted JSON: per asset its group, whether it is day-partitioned, the assets it reads, the
    tables it declares and its checks (blocking or not)."""
    from pipelines.definitions import defs

    graph = defs.resolve_asset_graph()
    assets, checks = found()
    out = {}
    for a in assets:
        node = graph.get(a.key)
        out[a.key.to_user_string()] = {
            "group": node.group_name, "partitioned": node.is_partitioned, "tables": sorted(tables_of(a) or []),
            "deps": sorted(k.to_user_string() for k in node.parent_keys), "checks": {}}
    for c in checks:
        for spec in c.check_specs:
            out[spec.asset_key.to_user_string()]["checks"][spec.name] = "blocking" if spec.blocking else "not blocking"
    return json.dumps(out, indent=1, sort_keys=True) + "\n"


def test_the_asset_graph_is_the_reviewed_snapshot():
    now, committed = graph_snapshot(), SNAPSHOT.read_text() if SNAPSHOT.exists() else ""
    diff = "".join(difflib.unified_diff(committed.splitlines(True), now.splitlines(True), str(SNAPSHOT), "now"))
    assert now == committed, (f"the asset graph changed: if that is meant, regenerate the snapshot with "
                              f"`{REGENERATE}` and commit it (the diff is the review):\n{diff}")


def test_definitions_serve_every_asset_and_check_found():
    from pipelines.definitions import all_assets, all_checks, daily_assets, daily_checks, defs

    assets, checks = found()
    graph = defs.resolve_asset_graph()
    assert {a.key for a in [*all_assets, *daily_assets]} == {a.key for a in assets} == graph.get_all_asset_keys()
    assert {a.key for a in daily_assets} == {k for k in graph.get_all_asset_keys() if graph.get(k).is_partitioned}
    assert sum(len(c.check_specs) for c in [*all_checks, *daily_checks]) == len(graph.asset_check_keys)
    assert {s.asset_key for c in daily_checks for s in c.check_specs} <= {a.key for a in daily_assets}


def test_derived_steps_follow_the_graph():
    """Every pure build is an asset's, and steps() runs them in an order the graph allows (every asset a step
    reads from, directly or not, that has a pure build runs before it); metrics only with a MetricsConfig."""
    from analysis.derive.metrics import MetricsConfig
    from analysis.derive.taxonomy import load
    from pipelines.definitions import defs

    graph = defs.resolve_asset_graph()
    keys = {k.to_user_string() for k in graph.get_all_asset_keys()}
    pure = builds()
    assert set(pure) <= keys
    order = [key for key, _ in steps(load(), MetricsConfig())]
    assert sorted(order) == sorted(pure)
    for i, key in enumerate(order):
        ancestors = {k.to_user_string() for k in graph.get_ancestor_asset_keys(_key(key))}
        assert not ancestors & set(order[i + 1:]), f"{key} runs before what it reads: {ancestors & set(order[i:])}"
    toposorted = [k.to_user_string() for k in graph.toposorted_asset_keys]
    assert order == [k for k in toposorted if k in pure]
    without = [key for key, _ in steps(load())]
    assert without == [k for k in order if graph.get(_key(k)).group_name != METRICS_GROUP]
    assert {"jobs", "node_events", "failure_attribution", "job_runs", "node_incidents"} <= set(without)


def _key(user_string: str):
    from dagster import AssetKey

    return AssetKey.from_user_string(user_string)


if __name__ == "__main__":  # regenerate the snapshot (outside pytest: a test run must not write into the checkout)
    SNAPSHOT.write_text(graph_snapshot())
    print(f"wrote {SNAPSHOT}", file=sys.stderr)
