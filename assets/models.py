"""Forward-looking assets: lemon scores and the node actions, and the exports Slurm consumes."""
from pathlib import Path

from dagster import AssetCheckResult, MaterializeResult, MetadataValue, asset, asset_check

from analysis.commands import data_health
from analysis.fleet import identity
from analysis.nodes import exports, lifecycle
from analysis.nodes import node_models
from analysis.nodes.lemon_scoring import NoHistory
from analysis.version import made_by
from assets.degrade import withheld_on_error
from assets.graph import writes
from assets.resources import LogSources, ModelSettings, ReportSettings, Warehouse
from assets.unchanged import replayed_while_unchanged, unless_unchanged


@asset(deps=["node_incidents", "failure_attribution", "tickets", "node_state_periods", "jobs", "benchmark_criteria"],
       group_name="models",
       description="lemon_features, lemon_scores (classifier with labels, else Meta-style thresholds), incident_samples, "
                   "node_risk (Cox-Time and baselines), model_evaluation, node_actions (watch / drain_after_job / "
                   "drain_now; node_action_history keeps every as-of), node_lifecycle, repeat_offenders and validation_plan, as of the "
                   "end of the data. The classifier and the incident "
                   "models are retrained on a cadence (metadata: trained or loaded, their age).",
       metadata=writes("lemon_features", "lemon_scores", "incident_samples", "node_risk", "model_evaluation",
                       "node_actions", "validation_plan", "node_population", "repeat_offenders", "node_action_history",
                       "node_lifecycle", "node_lifecycle_now"))
@unless_unchanged(files=lambda kw: [kw["models"].labels_path(kw["sources"].source_dir)])
@withheld_on_error
def node_actions(warehouse: Warehouse, sources: LogSources, models: ModelSettings) -> MaterializeResult:
    with warehouse.connect() as con:
        try:
            result = node_models.run_models(con, models.config(sources.source_dir, warehouse.db_path))
        except NoHistory as exc:
            return MaterializeResult(metadata={"skipped": str(exc)})
        fleet = node_models.fleet_size(con)
    counts = result.actions.group_by("action").len()
    lemon_model = result.lemon.model.metadata("lemon") if result.lemon.model else {}
    return MaterializeResult(metadata={
        "as_of": result.as_of.isoformat(), "lemon_method": result.lemon.method,
        "lemons": int(result.lemon.scores["is_lemon"].sum()), "fleet": fleet,
        **lemon_model, **result.incident.metadata("incident"),
        **{f"action_{a}": int(n) for a, n in counts.iter_rows()}})


@asset_check(asset=node_actions, blocking=True,
             description="The blocklist would drain at most max_drain_share of the fleet, or max_drain_floor nodes "
                         "on a small one (a runaway rule or bad data must not empty the cluster).")
@replayed_while_unchanged
def drain_share_sane(warehouse: Warehouse, models: ModelSettings) -> AssetCheckResult:
    with warehouse.connect() as con:
        fleet = node_models.fleet_size(con)
        try:
            actions, _ = exports.latest_actions(con)
        except ValueError:  # no history yet: nothing to drain
            actions = None
    drains, limit, problem = exports.drain_excess(actions, fleet, models.ladder())
    if problem:  # node_exports will not run: the report and the run summary say the exports are withheld
        with warehouse.connect() as con:
            data_health.withhold(con, "node_exports", f"drain_share_sane: {problem}")
    return AssetCheckResult(passed=problem is None,
                            description=problem and f"{problem}: check node_actions before using the exports",
                            metadata={"drain": drains, "fleet": fleet, "limit": limit})


@asset(deps=[node_actions], group_name="models",
       description="OUT/exports/: blocklist.txt (Slurm hostlist), drain.sh (scontrol; kubectl.sh and "
                   "node_conditions.json for Kubernetes nodes, ModelSettings.export_platform; never run by goodput, "
                   "each checks the live state before it acts: docs/node-exports.md), "
                   "blocklist.json (schemas/blocklist.schema.json), validation_plan.json (Anubis Selector).")
@unless_unchanged
@withheld_on_error
def node_exports(warehouse: Warehouse, models: ModelSettings, report_settings: ReportSettings) -> MaterializeResult:
    with warehouse.connect() as con:
        try:
            actions, as_of = exports.latest_actions(con)
        except ValueError as exc:
            return MaterializeResult(metadata={"skipped": str(exc)})
        plan = exports.latest_plan(con, as_of)
        slurm = exports.slurm_out_of_service(con, as_of)
        cluster = identity.cluster_of(con)
        fleet = node_models.fleet_size(con)
        resume = lifecycle.resume_candidates(con)  # repaired and validated since goodput drained them
        platform = exports.resolve_platform(con, models.export_platform)
    paths = exports.write_exports(actions, Path(report_settings.out_dir) / "exports", as_of,
                                  made_by(warehouse.db_path), models.ladder(), plan, slurm, cluster,
                                  resume=resume, platform=platform, fleet=fleet)
    return MaterializeResult(metadata={name: MetadataValue.path(str(p)) for name, p in paths.items()})
