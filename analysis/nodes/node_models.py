"""The forward-looking half, as one call: lemon scores, (incident risk,) and the
node_actions ladder the exports are written from, all as of one day with
only the data before it."""
from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path

import duckdb
import polars as pl

from analysis import sql
from analysis.nodes import asof
from analysis.nodes import exports
from analysis.nodes import incident_model
from analysis.nodes import lemon_scoring
from analysis.nodes import lemons
from analysis.nodes import selector
from analysis.nodes.cadence import Cadence, ModelState


NEEDED = ("jobs", "node_incidents", "failure_attribution")  # built by `goodput run`


@dataclass(frozen=True)
class ModelsConfig:
    lemon: lemons.LemonConfig = field(default_factory=lemons.LemonConfig)
    ladder: exports.LadderConfig = field(default_factory=exports.LadderConfig)
    labels_path: Path | None = None  # labels/lemons.csv; None or missing: thresholds decide
    model_dir: Path | None = None  # where trained models are saved (beside the warehouse)
    incident: incident_model.IncidentConfig = field(default_factory=incident_model.IncidentConfig)
    benchmarks_path: Path | None = None  # the Selector's catalog; None: catalog/validation_benchmarks.yaml
    # validate until a node's 7-day incident probability is under this: a probability,
    # or pNN, the fleet's NN-th percentile (the riskiest nodes brought to where most are)
    validation_target: float | str = "p90"
    cadence: Cadence = field(default_factory=Cadence)  # when the saved models are retrained (analysis.nodes.cadence)


@dataclass
class ModelsResult:
    as_of: datetime
    lemon: lemon_scoring.LemonRun
    actions: pl.DataFrame
    risk: pl.DataFrame
    incident_evaluation: pl.DataFrame  # empty when the saved incident models were loaded (not re-evaluated)
    validation_plan: pl.DataFrame
    incident: ModelState | None = None


def load_labels(con: duckdb.DuckDBPyConnection, path: Path | None) -> pl.DataFrame | None:
    """The operator's labels, checked against the warehouse's hosts; None when there is no file."""
    if path is None or not Path(path).exists():
        return None
    return lemons.read_labels(Path(path), set(sql.query(con, "models/model_hosts")["host"].to_list()))


def fleet_size(con: duckdb.DuckDBPyConnection) -> int:
    return sql.query(con, "models/model_hosts").height


def run_models(con: duckdb.DuckDBPyConnection, cfg: ModelsConfig = ModelsConfig(),
               as_of: datetime | None = None) -> ModelsResult:
    """Labels are read and checked before anything is written: a bad file
    changes nothing in the warehouse."""
    missing = [t for t in NEEDED if not sql.table_exists(con, t)]
    if missing:
        raise ValueError(f"the warehouse has no {', '.join(missing)} yet: run `goodput run --source DIR` first")
    labels = load_labels(con, cfg.labels_path)
    catalog = selector.load_catalog(cfg.benchmarks_path)
    start = incident_model.first_day(con)
    if start is None:
        raise lemon_scoring.NoHistory("the warehouse holds no incident history yet (no jobs, node events, tickets "
                                      "or node states)")
    as_of = as_of or lemon_scoring.default_as_of(con)
    with asof.once(con, as_of):  # the three read the incidents as known at as_of: built once for them
        lemon = lemon_scoring.score_lemons(con, as_of, cfg.lemon, labels, cfg.model_dir, cfg.cadence)
        risk, evaluation, incident = incident_model.run(con, as_of, start, cfg.incident, cfg.model_dir, cfg.cadence)
        actions = exports.build_node_actions(con, as_of, cfg.ladder)
    plan = selector.plan(con, as_of, catalog, cfg.validation_target)
    return ModelsResult(as_of, lemon, actions, risk, evaluation, plan, incident)
