"""Attribution assets: classified events, failure causes, job runs, node incidents."""
from dagster import AssetCheckResult, MaterializeResult, asset, asset_check

from analysis import sql
from analysis.derive import attribution
from assets.graph import writes
from assets.resources import TaxonomyConfig, Warehouse
from assets.unchanged import replayed_while_unchanged, unless_unchanged

# The pure build behind each asset, with the resources' defaults: tests and benchmarks run them (assets/pure_builds.py).
BUILDS = {"classified_events": lambda con, s: attribution.classify_events(con, s.taxonomy),
          "failure_attribution": lambda con, s: attribution.attribute_failures(con, s.taxonomy),
          "job_runs": lambda con, s: attribution.build_job_runs(con),
          "node_incidents": lambda con, s: attribution.build_node_incidents(con)}


@asset(deps=["node_events"], group_name="attribution",
       description="Node events explained by a taxonomy rule (cause, domain, severity, priority).",
       metadata=writes("classified_events", "taxonomy_rules", "taxonomy_causes", "operator_reasons",
                       "unclassified_reasons", "classified_event_days"))
@unless_unchanged
def classified_events(warehouse: Warehouse, taxonomy: TaxonomyConfig) -> MaterializeResult:
    with warehouse.connect() as con:
        n = attribution.classify_events(con, taxonomy.load())
    return MaterializeResult(metadata={"events": n})


@asset(deps=["jobs", "classified_events"], group_name="attribution",
       description="Every event in each failed job's window, and the primary cause (Aegis order).",
       metadata=writes("failure_attribution", "job_failure_causes", "maintenance_requeues", "failure_rates_by_cause",
                       "job_status_breakdown", "attributed_days"))
@unless_unchanged
def failure_attribution(warehouse: Warehouse, taxonomy: TaxonomyConfig) -> MaterializeResult:
    with warehouse.connect() as con:
        counts = attribution.attribute_failures(con, taxonomy.load())
    return MaterializeResult(metadata=counts)


@asset_check(asset=failure_attribution, blocking=True,
             description="Every FAILED, NODE_FAIL and OUT_OF_MEMORY instance has exactly one primary cause.")
@replayed_while_unchanged
def one_primary_cause(warehouse: Warehouse) -> AssetCheckResult:
    with warehouse.connect() as con:
        bad = sql.scalar(con, "derive/attribution_primary_problems")
    return AssetCheckResult(passed=bad == 0, metadata={"instances_without_exactly_one_primary": bad})


# failures as job_failure_causes defines them: its attribution, and the node states that mark maintenance
@asset(deps=["jobs", "failure_attribution", "node_state_periods"], group_name="attribution",
       description="Job instances chained into training runs (requeues and resubmissions); crash loops flagged.",
       metadata=writes("job_runs"))
@unless_unchanged
def job_runs(warehouse: Warehouse, taxonomy: TaxonomyConfig) -> MaterializeResult:
    with warehouse.connect() as con:
        n = attribution.build_job_runs(con, taxonomy.run_gap_minutes * 60, taxonomy.crash_loop_min)
    return MaterializeResult(metadata={"instances": n})


@asset(deps=["classified_events", "node_state_periods", "tickets", "jobs"], group_name="attribution",
       description="One row per node incident: first event, cause, severity, drain, return to service, ticket.",
       metadata=writes("node_incidents", "cause_cooccurrence", "top_offending_nodes", "node_outages",
                       "node_availability", "availability_by_cause", "availability_by_week", "event_episodes"))
@unless_unchanged
def node_incidents(warehouse: Warehouse, taxonomy: TaxonomyConfig) -> MaterializeResult:
    with warehouse.connect() as con:
        n = attribution.build_node_incidents(con, taxonomy.incident_gap_minutes * 60)
    return MaterializeResult(metadata={"incidents": n})
