"""The analysis layer's settings, each default defined once: the dataclasses the analysis functions take, the
Dagster resources (assets/resources.py) and the command line's options (pipelines/cli/) read their defaults from
(tests/test_settings_defaults.py checks every resource field and every numeric option against them). Standard
library only: `goodput --help` shows these defaults without loading polars, numpy or torch. Each class is read
where its comment says (and imported there under its old name)."""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path


# CriteriaConfig: read by analysis/criteria/learn.py
@dataclass(frozen=True)
class CriteriaConfig:
    alpha: float = 0.95  # required similarity (SuperBench's usual 5% variance rules read the same)
    noise_z: float = 4.5  # ~3e-6 false alarms per healthy metric: x hundreds of metrics, ~0.1% of nodes per run
    min_alpha: float = 0.90  # widen a noisy metric's threshold down to here, no further
    max_near_share: float = 0.005  # samples allowed within a third of the tolerance of the threshold
    max_drop_share: float = 0.2
    min_hosts: int = 5  # fewer nodes than this say nothing about a fleet
    repeatability_floor: float = 0.95  # a benchmark below it blocks the export (Anubis: within alpha)
    window_days: int = 56  # runs learned from and judged: the trailing window before the latest run (8 weekly runs)
    steps_q: int = 16  # quantiles kept per per-step sample
    missing_share: float = 0.5  # a metric "the fleet reports" in a run: on at least this share of its nodes
    # A node is defective when it failed at least min_failed_runs runs and min_failed_share of its runs in
    # the window. One failed run is a re-test: ~1% of healthy nodes fail a run (a one-off slow GPU), so two
    # in 8 runs happen to ~0.4% of them; three to ~0.005%. A defect that shows in 80% of runs fails 3 of 8
    # with probability 0.999.
    min_failed_runs: int = 3
    min_failed_share: float = 1 / 3
    max_iter: int = 4


# LemonConfig: read by analysis/nodes/lemons.py; the signals Meta thresholds (the others are features only)
META_SIGNALS = ("excluded_jobs", "distinct_xids", "tickets", "out_of_service", "multi_node_failures",
                "single_node_failures", "single_node_failure_rate")


@dataclass(frozen=True)
class LemonConfig:
    """Windows and Meta-style thresholds. Meta set theirs by hand from the
    fleet's CDF of each signal over a 28-day snapshot (Fig. 11) and published
    none. A threshold here is a number, or ``pNN``: the fleet's NN-th
    percentile of that signal in the same snapshot, never below 2 for a count
    (0.5 for the failure rate), so a sparse signal cannot fire on one
    occurrence. A node is a lemon by thresholds when at least ``min_signals``
    of its signals reach theirs."""
    window_days: int = 28
    thresholds: dict = field(default_factory=lambda: {s: "p99" for s in META_SIGNALS})
    min_signals: int = 2
    snapshot_days: int = 7  # training snapshots: one every week of history
    min_positive_labels: int = 3  # fewer labelled lemons: thresholds decide


# OffenderConfig: read by analysis/nodes/offenders.py
@dataclass(frozen=True)
class OffenderConfig:
    window_days: int = 180  # the history judged (the data's whole span when shorter)
    p: float = 0.01  # chance of reaching the threshold at the fleet's rate
    minimum: int = 3  # never fewer incidents than this
    rma_repeats: int = 3  # one cause this often in the window: the repair did not hold, RMA the part


# LifecycleConfig: read by analysis/nodes/lifecycle.py
@dataclass(frozen=True)
class LifecycleConfig:
    escalate_drains: int = 3  # repair attempts for one component (drains, failed validations) ...
    escalate_days: int = 90  # ... within this many days: RMA / hardware inspection


# LadderConfig: read by analysis/nodes/exports.py
@dataclass(frozen=True)
class LadderConfig:
    expiry_days: int = 14  # evidence older than this no longer holds a node
    clean_days: int = 7  # back in service and clean this long: off the list
    repeat_min: int = 2  # incidents in the window that mean drain_after_job
    risk_p7: float = 0.5  # 7-day incident probability that means drain_after_job
    max_drain_share: float = 0.10  # a blocking check fails above this share of the fleet ...
    max_drain_floor: int = 5  # ... and above this many nodes (a small cluster may lose 5 nodes at once)
    # a job's blame is known once the attribution window after its end has passed (taxonomy after_min)
    attribution_after_s: int = 300
    # a repeated validation failure, as goodput criteria calls a node defective (analysis/criteria/learn.py):
    benchmark_window_days: int = CriteriaConfig.window_days  # validation runs that count ...
    benchmark_min_failed: int = CriteriaConfig.min_failed_runs  # ... how many must have failed ...
    benchmark_min_share: float = CriteriaConfig.min_failed_share  # ... and what share of the node's runs
    # With no repair ticket either way, a node is back in service after a critical incident
    # (sql/models/build_clean_evidence.sql) when, since its last event and not drained now, at least
    # clean_checks health checks passed and clean_jobs jobs of clean_job_hours or more ran on it
    # and completed; or it rebooted or came back from DRAIN/DOWN and then passed clean_checks
    # checks or completed one such job.
    clean_checks: int = 1
    clean_jobs: int = 3
    clean_job_hours: float = 2.0
    # nodes with repeated hardware incidents in their own history (analysis/nodes/offenders.py)
    offenders: OffenderConfig = field(default_factory=OffenderConfig)
    # repair attempts that escalate a node (analysis/nodes/lifecycle.py)
    lifecycle: LifecycleConfig = field(default_factory=LifecycleConfig)


# MetricsConfig: read by analysis/derive/metrics.py
@dataclass
class MetricsConfig:
    u0_s: int = 300  # restart overhead
    dt_s: int = 3600  # checkpoint interval
    second_order_window_s: int = 600  # requeued start within this after a preemption
    overrides: list[dict] = field(default_factory=list)  # {scope: run|account, key, u0_s, dt_s}

    @classmethod
    def from_file(cls, path: Path | str | None, **defaults) -> "MetricsConfig":
        """Per-account / per-run u0 and Δt from YAML:
        ``accounts: {llm: {checkpoint_min: 30}}``, ``runs: {"1001234": {restart_min: 2}}``."""
        cfg = cls(**defaults)
        if not path:
            return cfg
        import yaml  # (a third-party module: `goodput --help` reads these defaults without loading it)

        doc = yaml.safe_load(Path(path).read_text()) or {}
        for scope, entries in (("account", doc.get("accounts") or {}), ("run", doc.get("runs") or {})):
            for key, spec in entries.items():
                unknown = set(spec) - {"checkpoint_min", "restart_min"}
                if unknown:
                    raise ValueError(f"{path}: {scope} {key}: unknown keys {sorted(unknown)}")
                cfg.overrides.append({"scope": scope, "key": str(key),
                                      "u0_s": int(spec["restart_min"] * 60) if "restart_min" in spec else None,
                                      "dt_s": int(spec["checkpoint_min"] * 60) if "checkpoint_min" in spec else None})
        return cfg


# FrameConfig: read by analysis/telemetry/frames.py
@dataclass(frozen=True)
class FrameConfig:
    window_s: int = 60  # 6 samples at a 10 s interval
    stride_s: int = 60
    max_fill_s: int = 30  # nearest-sample fill for gaps up to this long
    # the common clock; one model serves every job, so every job's windows hold the same number of samples
    # (DCGM exporter scrapes every 10-30 s; None: the job's own median interval)
    interval_s: int | None = 10


# DetectConfig: read by analysis/telemetry/detect.py
@dataclass(frozen=True)
class DetectConfig:
    frame: FrameConfig = field(default_factory=FrameConfig)
    continuity_s: int = 240  # Minder: 4 minutes
    aegis_sigma: float = 2.0
    aegis_s: int = 600  # Aegis: 10 minutes
    threshold_margin: float = 1.5  # over the highest score a training machine not taken as a suspect sustained
    threshold_floor: float = 3.0  # a robust z under this is never an outlier


# Cadence: read by analysis/nodes/cadence.py
@dataclass(frozen=True)
class Cadence:
    retrain_after_days: float = 7.0  # 0: retrain every run (the behaviour before cadences)
    retrain: frozenset = frozenset()  # kinds to retrain now whatever their age ("all": every kind)
    scope: str | None = None  # the warehouse's file name: artifacts of another warehouse in the folder are not its

    def forced(self, kind: str) -> bool:
        return kind in self.retrain or "all" in self.retrain


# the telemetry detector's training (analysis/telemetry/run.py)
@dataclass(frozen=True)
class TelemetryTraining:
    epochs: int = 30
    max_train_jobs: int = 50  # the latest completed jobs it trains on
    min_train_jobs: int = 3  # fewer: no detector
    lookback_days: float = 14.0  # a retrained detector re-judges the jobs that ended in the last two weeks


# job runs and node incidents (analysis/derive/attribution.py)
@dataclass(frozen=True)
class RunsConfig:
    run_gap_s: int = 3600  # a resubmission within this gap continues a job run
    crash_loop_min: int = 5  # restarts after failures that make a crash loop
    incident_gap_s: int = 1800  # events closer than this are one node incident


# the node scripts goodput writes (analysis/nodes/scripts.py, analysis/nodes/exports.py)
@dataclass(frozen=True)
class ExportConfig:
    max_age_hours: int = 24  # drain.sh / kubectl.sh refuse to run on a node list older than this
    # the nodes' scheduler: slurm, kubernetes, both, or auto: that of the jobs the warehouse holds (slurm/ or
    # kubernetes/ read; both folders: both)
    platform: str = "auto"


# what a run could not use (analysis/commands/data_health.py) and where it is told (analysis/alerts/)
@dataclass(frozen=True)
class HealthConfig:
    max_reject_rate: float = 0.02  # of the lines of a source's newly read files: over it, the source degrades the run
    alert_timeout_s: float = 5.0  # goodput is offline: an unreachable Alertmanager must not hold the nightly run
