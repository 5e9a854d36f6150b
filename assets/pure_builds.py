"""The derived tables without a Dagster run, for tests, benchmarks and scripts: each asset module maps its assets
to the pure build behind them (``BUILDS``: asset key -> ``build(con, settings)``, settings the resources'
defaults), and they run in the asset graph's order (assets/graph.py), so this order cannot drift from the graph.

Steps with no pure build are left to the tests that build them: the ingest, the steps that train models or write
files (telemetry, benchmark criteria, node models, exports, the report), and the port counters (never part of
these builds: the simulated clusters tests share would change). Metrics (the assets of group "metrics") are
built only with a MetricsConfig. tests/test_asset_graph.py checks the order against Dagster's."""
from __future__ import annotations

import importlib
import pkgutil
from dataclasses import dataclass
from typing import Callable

import duckdb

from analysis.derive.metrics import MetricsConfig
from analysis.derive.taxonomy import Taxonomy
from assets.graph import found

METRICS_GROUP = "metrics"


@dataclass(frozen=True)
class Settings:
    """What the pure builds read besides the warehouse."""
    taxonomy: Taxonomy
    metrics: MetricsConfig | None = None


def builds() -> dict[str, Callable[[duckdb.DuckDBPyConnection, Settings], object]]:
    """Every asset module's BUILDS, by asset key."""
    import assets

    out = {}
    for module in pkgutil.iter_modules(assets.__path__):
        out.update(getattr(importlib.import_module(f"assets.{module.name}"), "BUILDS", {}))
    return out


def steps(taxonomy: Taxonomy, metrics_cfg: MetricsConfig | None = None
          ) -> list[tuple[str, Callable[[duckdb.DuckDBPyConnection], object]]]:
    """The derived steps as (asset key, build on a connection), in the graph's order: jobs, events and
    attribution, and (with ``metrics_cfg``) the metrics."""
    settings, pure, (assets_found, _) = Settings(taxonomy, metrics_cfg), builds(), found()
    wanted = [a.key.to_user_string() for a in assets_found
              if metrics_cfg is not None or a.group_names_by_key[a.key] != METRICS_GROUP]
    return [(key, _bound(pure[key], settings)) for key in wanted if key in pure]


def build_all(con: duckdb.DuckDBPyConnection, taxonomy: Taxonomy, metrics_cfg: MetricsConfig | None = None) -> dict:
    """Run every step of ``steps``; returns what each build returned (its counts), by asset key."""
    return {key: build(con) for key, build in steps(taxonomy, metrics_cfg)}


def _bound(build, settings: Settings) -> Callable[[duckdb.DuckDBPyConnection], object]:
    return lambda con: build(con, settings)
