"""Cluster names and where a fleet's trees and warehouses are."""
from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from analysis.sources import SOURCES

# Slurm's ClusterName is lower case; the name is also a folder, a file and an SQL identifier, so no more than this.
NAME = re.compile(r"[a-z][a-z0-9_-]{0,31}")


class FleetError(ValueError):
    """A fleet source or warehouse folder a user must fix (one line, no traceback)."""


def check_name(name: str) -> str:
    if not NAME.fullmatch(name or ""):
        raise FleetError(f"{name!r} is not a cluster name: lower-case letters, digits, '-' and '_', starting with a "
                         "letter, at most 32 characters (Slurm's ClusterName)")
    return name


@dataclass(frozen=True)
class Cluster:
    name: str
    source: Path  # its source tree: the layout `goodput run --source` reads


def clusters_in(fleet_source: Path) -> list[Cluster]:
    """The clusters of a fleet source: each folder below it that holds at least one source folder, by name.
    A tree that is itself one cluster's (source folders at its top) is refused: run it with --source."""
    fleet_source = Path(fleet_source)
    if not fleet_source.is_dir():
        raise FleetError(f"fleet source {fleet_source} is not a directory")
    top = sorted(p.name for p in fleet_source.iterdir() if p.is_dir() and p.name in SOURCES)
    if top:
        raise FleetError(f"{fleet_source} holds source folders itself ({', '.join(top)}/): it is one cluster's tree; "
                         f"run it with `goodput run --source {fleet_source} --cluster NAME`, or move it to "
                         f"{fleet_source}/NAME/")
    found = [p for p in sorted(fleet_source.iterdir())
             if p.is_dir() and not p.name.startswith(".") and any((p / s).is_dir() for s in SOURCES)]
    if not found:
        raise FleetError(f"{fleet_source} has no cluster folder (a folder per cluster, each with slurm/ or "
                         "kubernetes/, kernel/, ...)")
    return [Cluster(check_name(p.name), p) for p in found]


def warehouse_of(db_dir: Path, cluster: str) -> Path:
    return Path(db_dir) / f"{check_name(cluster)}.duckdb"


def warehouses_in(db_dir: Path) -> dict[str, Path]:
    """The cluster warehouses of a fleet's warehouse folder (snapshots and other files aside), by cluster."""
    db_dir = Path(db_dir)
    if not db_dir.is_dir():
        raise FleetError(f"fleet warehouse folder {db_dir} is not a directory")
    found = {p.stem: p for p in sorted(db_dir.glob("*.duckdb")) if NAME.fullmatch(p.stem)}
    if not found:
        raise FleetError(f"{db_dir} holds no cluster warehouse (<cluster>.duckdb): run `goodput run --fleet` first")
    return found
