"""Validation Selector (Anubis §3.3, Alg. 1): for each risky node, greedily
pick the benchmarks with the best incident-probability reduction per minute
until the node's probability is under a target."""
from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

import duckdb
import polars as pl
import yaml

from analysis import package_files, sql

CATALOG = package_files.catalog("validation_benchmarks.yaml")
CATEGORIES = ("gpu", "host", "network", "storage")
PRIOR_WEIGHT = 2.0  # a node's own incidents count against this many pseudo-incidents of the fleet's mix


class CatalogError(ValueError):
    pass


@dataclass(frozen=True)
class Benchmark:
    name: str
    duration_min: float
    catches: dict  # category -> share of that category's defects it catches


def load_catalog(path: Path | None = None) -> list[Benchmark]:
    path = Path(path or CATALOG)
    try:
        doc = yaml.safe_load(path.read_text())
    except (OSError, yaml.YAMLError) as exc:
        raise CatalogError(f"{path}: cannot read the benchmark catalog ({getattr(exc, 'strerror', None) or exc})") from None
    out = []
    for i, b in enumerate((doc or {}).get("benchmarks") or []):
        where = f"{path}: benchmarks[{i}]"
        if not isinstance(b, dict) or not isinstance(b.get("name"), str):
            raise CatalogError(f"{where}: needs a name")
        dur, catches = b.get("duration_min"), b.get("catches") or {}
        if not isinstance(dur, (int, float)) or isinstance(dur, bool) or dur <= 0:
            raise CatalogError(f"{where} ({b['name']}): duration_min must be a positive number of minutes")
        bad = {c: v for c, v in catches.items() if c not in CATEGORIES or not isinstance(v, (int, float)) or not 0 <= v <= 1}
        if bad:
            raise CatalogError(f"{where} ({b['name']}): catches must map {', '.join(CATEGORIES)} to shares in [0, 1]; "
                               f"bad: {bad}")
        out.append(Benchmark(b["name"], float(dur), {c: float(v) for c, v in catches.items()}))
    if not out:
        raise CatalogError(f"{path}: no benchmarks")
    return out


def select(p: float, shares: dict[str, float], catalog: list[Benchmark], target: float) -> list[dict]:
    """Alg. 1: while the node's remaining probability is over ``target``, add the
    benchmark whose expected reduction per minute is largest. A benchmark
    removes its catch rate of each category's remaining probability."""
    remaining = {c: p * shares.get(c, 0.0) for c in CATEGORIES}
    steps, left = [], list(catalog)
    while sum(remaining.values()) > target and left:
        gains = [(sum(remaining[c] * b.catches.get(c, 0.0) for c in CATEGORIES) / b.duration_min, -i, b)
                 for i, b in enumerate(left)]
        per_min, _, best = max(gains)
        if per_min <= 0:
            break
        before = sum(remaining.values())
        remaining = {c: v * (1 - best.catches.get(c, 0.0)) for c, v in remaining.items()}
        steps.append({"benchmark": best.name, "duration_min": best.duration_min, "p_before": before,
                      "p_after": sum(remaining.values()), "reduction": before - sum(remaining.values())})
        left.remove(best)
    return steps


def resolve_target(con: duckdb.DuckDBPyConnection, as_of: datetime, target) -> float:
    """A probability, or ``pNN``: the fleet's NN-th percentile of 7-day Cox-Time
    risk, so the riskiest nodes are validated down to where most of the fleet is."""
    if isinstance(target, str):
        q = float(target.removeprefix("p")) / 100
        value = con.execute(sql.load("models/fleet_risk_quantile"), {"as_of": as_of, "q": q}).fetchall()[0][0]
        return float(value) if value is not None else 1.0
    return float(target)


def plan(con: duckdb.DuckDBPyConnection, as_of: datetime, catalog: list[Benchmark] | None = None,
         target: float | str = "p90") -> pl.DataFrame:
    """validation_plan for every node whose 7-day Cox-Time incident probability
    is over ``target`` and that is not being drained: host, step, benchmark,
    duration_min, p_before, p_after, reduction."""
    catalog = catalog or load_catalog()
    target = resolve_target(con, as_of, target)
    sql.run(con, "schema/node_action_history")  # the as-of's drains: built by build_node_actions before the plan
    nodes = sql.query(con, "models/validation_candidates", {"as_of": as_of, "target": target})
    fleet = {c: float(nodes[f"fleet_{c}"][0]) if nodes.height else 0.0 for c in CATEGORIES}
    total = sum(fleet.values()) or 1.0
    prior = {c: (fleet[c] / total) if sum(fleet.values()) else 1 / len(CATEGORIES) for c in CATEGORIES}
    rows = []
    for r in nodes.iter_rows(named=True):
        n = sum(r[f"{c}_all"] for c in CATEGORIES)
        shares = {c: (r[f"{c}_all"] + PRIOR_WEIGHT * prior[c]) / (n + PRIOR_WEIGHT) for c in CATEGORIES}
        for i, step in enumerate(select(r["p_incident"], shares, catalog, target), start=1):
            rows.append({"host": r["host"], "as_of": as_of, "step": i, **step})
    schema = {"host": pl.Utf8, "as_of": pl.Datetime("us"), "step": pl.Int32, "benchmark": pl.Utf8,
              "duration_min": pl.Float64, "p_before": pl.Float64, "p_after": pl.Float64, "reduction": pl.Float64}
    frame = pl.DataFrame(rows, schema=schema)
    sql.run_staged(con, {"staged_validation_plan": frame},
                   [("schema/validation_plan", None), ("models/store_validation_plan", {"as_of": as_of})])
    return frame
