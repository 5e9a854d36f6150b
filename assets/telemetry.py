"""Faulty machines from telemetry: Minder's alerts (also written as node events, so attribution sees
them) and the detectors' evaluation against attribution. analysis.telemetry.run is imported in the bodies: it
loads torch, which a run that rebuilds nothing does not need."""
from pathlib import Path

from dagster import MaterializeResult, asset

from assets.degrade import withheld_on_error
from assets.graph import writes
from assets.unchanged import unless_unchanged
from assets.resources import TelemetrySettings, Warehouse


@asset(deps=["telemetry", "jobs"], group_name="telemetry",
       description="telemetry_jobs (jobs telemetry covers), machine_alerts (Minder and the methods beside it, "
                   "missing data), and the confirmed Minder alerts as node_events (source telemetry), for the jobs "
                   "not scored yet; the detector is retrained on a cadence (metadata: trained or loaded, its age).",
       metadata=writes("telemetry_jobs", "machine_alerts", "link_suspects", "node_events"))
@unless_unchanged
@withheld_on_error
def machine_alerts(warehouse: Warehouse, telemetry_settings: TelemetrySettings) -> MaterializeResult:
    from analysis.telemetry import run as telemetry_run

    s = telemetry_settings
    with warehouse.connect() as con:
        try:
            result = telemetry_run.run(con, s.config(), Path(warehouse.db_path).resolve().parent / "models",
                                       s.max_train_jobs, s.min_train_jobs, s.epochs, lookback_days=s.lookback_days,
                                       cadence=s.cadence(warehouse.db_path))
        except telemetry_run.NoTelemetry as exc:
            return MaterializeResult(metadata={"skipped": str(exc)})
    counts = result.alerts.group_by("method").len()
    return MaterializeResult(metadata={"jobs": result.jobs, "trained_on": result.trained_on,
                                       "model_version": result.model_version,
                                       "scored_machine_hours": round(result.machine_hours, 1),
                                       **result.model.metadata("detector"),
                                       **{f"alerts_{m}": int(n) for m, n in counts.iter_rows()}})


@asset(deps=[machine_alerts, "failure_attribution"], group_name="telemetry",
       description="A detector trained this run has its metrics ranked on windows this run's attribution labels "
                   "(the order saved with it, its alerts' metric_rank updated); then detector_evaluation: each "
                   "method's job-level precision, recall, F1 and lead time, against the hosts attribution blamed "
                   "from evidence other than telemetry.",
       metadata=writes("detector_evaluation", "machine_alerts"))
@unless_unchanged
@withheld_on_error
def detector_evaluation(warehouse: Warehouse, telemetry_settings: TelemetrySettings) -> MaterializeResult:
    from analysis.telemetry import run as telemetry_run

    s = telemetry_settings
    with warehouse.connect() as con:
        # ranked here, after attribution, not when trained: a nightly and a fresh run see the same labels
        priority = telemetry_run.rank_metrics(con, s.config(), Path(warehouse.db_path).resolve().parent / "models",
                                              s.cadence(warehouse.db_path).scope)
        ev = telemetry_run.evaluate_against_attribution(con)
    ranked = {} if priority is None else {"metric_priority": ", ".join(priority)}
    if ev is None:
        return MaterializeResult(metadata={**ranked,
                                           "skipped": "no telemetry job that completed or was blamed on a host"})
    return MaterializeResult(metadata={**ranked, **{f"f1_{r['method']}": round(r["f1"], 3)
                                                    for r in ev.iter_rows(named=True)}})
