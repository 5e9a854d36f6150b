"""Reliability metric assets: ETTR, failure rates and MTTF, goodput, P_deg."""
from dagster import MaterializeResult, asset

from analysis.derive import metrics
from assets.graph import writes
from assets.resources import MetricsSettings, Warehouse
from assets.unchanged import unless_unchanged

# The pure build behind each asset, with the resources' defaults: tests and benchmarks run them (assets/pure_builds.py).
BUILDS = {"job_run_ettr": lambda con, s: metrics.build_run_ettr(con, s.metrics),
          "node_gpus": lambda con, s: metrics.build_node_gpus(con),
          "failure_rates": lambda con, s: metrics.build_failure_rates(con),
          "goodput": lambda con, s: metrics.build_goodput(con, s.metrics),
          "iteration_degradation": lambda con, s: metrics.build_iteration_degradation(con)}


@asset(deps=["job_runs", "failure_attribution", "node_state_periods"], group_name="metrics",
       description="Measured ETTR per job run (W, Q, U, R; interruptions by cause) and C4 downtime per run.",
       metadata=writes("job_run_ettr", "ettr_parameters", "run_downtime", "job_run_ettr_inputs"))
@unless_unchanged
def job_run_ettr(warehouse: Warehouse, settings: MetricsSettings) -> MaterializeResult:
    with warehouse.connect() as con:
        n = metrics.build_run_ettr(con, settings.config())
    return MaterializeResult(metadata={"runs": n})


@asset(deps=["jobs", "topology"], group_name="metrics",
       description="Each node's GPUs, learned from the jobs' allocations (multi-node jobs take whole nodes).",
       metadata=writes("node_gpus"))
@unless_unchanged
def node_gpus(warehouse: Warehouse) -> MaterializeResult:
    with warehouse.connect() as con:
        fleet = metrics.build_node_gpus(con)
    return MaterializeResult(metadata={"gpus_per_node": fleet})


@asset(deps=["failure_attribution", "node_gpus"], group_name="metrics",
       description="Cluster failure rate r (Meta), MTTF by job size with 90% CIs, 1/(N r) projection, rate over time.",
       metadata=writes("cluster_failure_rate", "failure_rate_over_time", "mttf_by_job_size", "mttf_projection",
                       "health_check_first_seen"))
@unless_unchanged
def failure_rates(warehouse: Warehouse) -> MaterializeResult:
    with warehouse.connect() as con:
        rate = metrics.build_failure_rates(con)
    return MaterializeResult(metadata={k: float(v or 0) for k, v in rate.items()})


@asset(deps=["failure_attribution", "job_runs", "node_gpus", "straggler_episodes"], group_name="metrics",
       description="Goodput per day, losses by cause and size (failures, preemptions, stragglers), second-order preemptions, crash loops.",
       metadata=writes("goodput_daily", "goodput_losses", "second_order_preemptions", "goodput_loss",
                       "crash_loop_preemptions"))
@unless_unchanged
def goodput(warehouse: Warehouse, settings: MetricsSettings) -> MaterializeResult:
    with warehouse.connect() as con:
        summary = metrics.build_goodput(con, settings.config())
    return MaterializeResult(metadata={k: float(v or 0) for k, v in summary.items()})


@asset(deps=["benchmark_results", "telemetry"], group_name="metrics",
       description="Aegis P_deg for every per-step time series (benchmark samples, iteration-time telemetry).",
       metadata=writes("iteration_degradation"))
@unless_unchanged
def iteration_degradation(warehouse: Warehouse) -> MaterializeResult:
    with warehouse.connect() as con:
        n = metrics.build_iteration_degradation(con)
    return MaterializeResult(metadata={"series": n})
