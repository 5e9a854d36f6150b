"""The asset graph as the assets/ modules declare it, found rather than listed: pipelines/definitions.py serves
every asset and check defined in this package, assets/pure_builds.py runs the derived steps in its order, and
tests/test_asset_graph.py compares it with a reviewed snapshot.

A step that writes warehouse tables names them in its definition's metadata (``writes``), so the catalog says
which step writes a table. Not one asset per table (``multi_asset``): a step is the unit goodput skips, withholds,
fingerprints and reports on (assets/unchanged.py, assets/degrade.py, the run summary), and some tables are written
by more than one step (node_events: the ingest, then the telemetry, port-counter and job-log steps)."""
from __future__ import annotations

from functools import lru_cache

from dagster import (AssetChecksDefinition, AssetKey, AssetsDefinition, MetadataValue,
                     load_asset_checks_from_package_module, load_assets_from_package_module)

TABLES = "goodput/tables"  # definition metadata: the warehouse tables and views a step writes


def writes(*tables: str) -> dict:
    """An asset's ``metadata``: the tables (and views) it creates, replaces or adds rows to."""
    return {TABLES: MetadataValue.text(", ".join(tables))}


def tables_of(asset: AssetsDefinition) -> list[str] | None:
    """The tables an asset declares it writes (None: it declares none)."""
    declared = asset.specs_by_key[asset.key].metadata.get(TABLES)
    return None if declared is None else [t for t in declared.value.split(", ") if t]


@lru_cache(maxsize=None)
def found() -> tuple[tuple[AssetsDefinition, ...], tuple[AssetChecksDefinition, ...]]:
    """Every asset and every check in the assets/ package, assets in the graph's order (``toposorted``)."""
    import assets  # the package this module is in: walked once it is fully imported

    found_assets = load_assets_from_package_module(assets)
    return tuple(toposorted(found_assets)), tuple(load_asset_checks_from_package_module(assets))


def toposorted(assets: list[AssetsDefinition]) -> list[AssetsDefinition]:
    """Assets after every asset they read, level by level and by key within a level (Dagster's order, without
    its repository, which wants the resources bound first)."""
    by_key = {a.key: a for a in assets}
    reads = {a.key: {d.asset_key for d in a.specs_by_key[a.key].deps} & by_key.keys() for a in assets}
    order: list[AssetKey] = []
    while len(order) < len(by_key):
        level = sorted(k for k in by_key if k not in order and reads[k] <= set(order))
        if not level:
            raise ValueError(f"the assets' dependencies make a cycle among {sorted(set(by_key) - set(order))}")
        order += level
    return [by_key[k] for k in order]
