"""Dagster resources: where the warehouse lives and where the logs come from. Part of the Dagster door: the assets
take them as arguments, pipelines/definitions.py and pipelines/runner.py both get them from build_resources(). A
default from the environment is read when a resource is built (Field(default_factory=...)), not at import."""

import os
from contextlib import contextmanager
from pathlib import Path

from dagster import ConfigurableResource
from pydantic import Field

from analysis import warehouse
from analysis.ingest.contract import IngestOptions
from analysis.ingest.options import load_options
from analysis.paths import FLEET_DB_DIR, RUN_OUT
from analysis.package_files import demo_source
from analysis.settings import (Cadence, CriteriaConfig, DetectConfig, ExportConfig, FrameConfig, HealthConfig,
                               LadderConfig, LemonConfig, MetricsConfig, OffenderConfig, RunsConfig, TelemetryTraining)

def analysis_default(settings: type, name: str, per: int = 1):
    """A field whose default is the analysis settings dataclass's (analysis/settings.py), defined there once;
    ``per``: the analysis unit per the resource's (60: seconds there, minutes here). Its description names the
    setting (Dagster's launchpad shows it; tests/test_settings_defaults.py reads it)."""
    value = getattr(settings, name)
    if per != 1:
        value = value // per if isinstance(value, int) and value % per == 0 else value / per
    return Field(default=value, description=f"{settings.__name__}.{name}" + (f" / {per}" if per != 1 else ""))


def retrain_after_days_default(setting: float | None = None) -> float:
    """A resource's retrain_after_days when set, else $GOODPUT_RETRAIN_AFTER_DAYS (days of data a saved
    model serves before it is retrained; 0: every run), else Cadence's (7). Read when a model step runs, so a
    bad value fails that step with this message rather than every import."""
    if setting is not None:
        return max(0.0, float(setting))
    value = os.environ.get("GOODPUT_RETRAIN_AFTER_DAYS", "").strip()
    try:
        return max(0.0, float(value)) if value else Cadence.retrain_after_days
    except ValueError:
        raise ValueError(f"GOODPUT_RETRAIN_AFTER_DAYS must be a number of days, got {value!r}") from None


class Warehouse(ConfigurableResource):
    """The DuckDB file. Default ./data/warehouse.duckdb, or $GOODPUT_DB. A run holds it open for writing
    from its first step to its last (no reader can take it in between), then publishes the snapshot that
    readers open while the next run writes (analysis.snapshot)."""
    db_path: str = Field(default_factory=lambda: os.environ.get("GOODPUT_DB", str(warehouse.DEFAULT_DB)))

    def setup_for_execution(self, context) -> None:
        warehouse.hold(Path(self.db_path))

    def teardown_after_execution(self, context) -> None:
        warehouse.release(Path(self.db_path))

    @contextmanager
    def connect(self):
        con = warehouse.connect(Path(self.db_path))
        try:
            yield con
        finally:
            con.close()
            warehouse.drop_cache(Path(self.db_path))


class LogSources(ConfigurableResource):
    """The source directory (one folder per source) and how to read it."""
    source_dir: str = Field(default_factory=lambda: os.environ.get("GOODPUT_SOURCE", str(demo_source())))
    tz: str | None = None  # overrides goodput.yaml in the source directory
    sacct_delimiter: str | None = None
    boot_times: dict[str, str] = {}  # host -> ISO time, for raw dmesg; merged over goodput.yaml's
    benchmark_run_times: dict[str, str] = {}  # run folder under benchmarks/ -> ISO time; merged likewise

    def options(self) -> IngestOptions:
        return load_options(Path(self.source_dir), tz=self.tz, sacct_delimiter=self.sacct_delimiter,
                            boot_times=self.boot_times or None, benchmark_run_times=self.benchmark_run_times or None)


class TaxonomyConfig(ConfigurableResource):
    """Failure taxonomy and attribution settings. rules_file: an operator's
    override file merged over taxonomy/rules.yaml (default $GOODPUT_RULES)."""
    rules_file: str | None = Field(default_factory=lambda: os.environ.get("GOODPUT_RULES") or None)
    run_gap_minutes: int = analysis_default(RunsConfig, "run_gap_s", per=60)  # a resubmission within it continues a run
    crash_loop_min: int = analysis_default(RunsConfig, "crash_loop_min")  # restarts after failures: a crash loop
    incident_gap_minutes: int = analysis_default(RunsConfig, "incident_gap_s", per=60)  # closer events: one incident

    def load(self):
        from analysis.derive.taxonomy import load

        return load(self.rules_file)


class MetricsSettings(ConfigurableResource):
    """ETTR and goodput parameters: restart overhead u0 and checkpoint interval
    Δt (defaults 5 and 60 minutes), optionally per account or run from a YAML
    file (default $GOODPUT_ETTR_PARAMS)."""
    restart_min: float = analysis_default(MetricsConfig, "u0_s", per=60)
    checkpoint_min: float = analysis_default(MetricsConfig, "dt_s", per=60)
    second_order_window_min: float = analysis_default(MetricsConfig, "second_order_window_s", per=60)
    overrides_file: str | None = Field(default_factory=lambda: os.environ.get("GOODPUT_ETTR_PARAMS") or None)

    def config(self):
        from analysis.derive.metrics import MetricsConfig

        return MetricsConfig.from_file(self.overrides_file, u0_s=int(self.restart_min * 60),
                                       dt_s=int(self.checkpoint_min * 60),
                                       second_order_window_s=int(self.second_order_window_min * 60))


class ReportSettings(ConfigurableResource):
    """Where reports go, and the reject rate over which a source degrades them."""
    out_dir: str = Field(default_factory=lambda: os.environ.get("GOODPUT_OUT", str(RUN_OUT)))
    max_reject_rate: float = analysis_default(HealthConfig, "max_reject_rate")


class AlertSettings(ConfigurableResource):
    """Where `goodput run` posts the alerts of new drain and escalation decisions (docs/alerts.md): an Alertmanager's
    URL, default $GOODPUT_ALERTMANAGER_URL. None: nothing is sent (goodput is offline); the payload is written."""
    alertmanager_url: str | None = Field(default_factory=lambda: os.environ.get("GOODPUT_ALERTMANAGER_URL") or None)
    timeout_s: float = analysis_default(HealthConfig, "alert_timeout_s")


class ModelSettings(ConfigurableResource):
    """Lemon and blocklist settings. labels_file: the operator's lemon labels
    (default $GOODPUT_LABELS, else labels/lemons.csv in the source directory);
    without it Meta-style thresholds decide. Trained models (the lemon
    classifier, the incident models) are saved in models/ beside the warehouse
    and retrained when retrain_after_days of new data have passed, or their
    input definition changed (analysis.nodes.cadence); runs in between only score."""
    labels_file: str | None = Field(default_factory=lambda: os.environ.get("GOODPUT_LABELS") or None)
    retrain_after_days: float | None = None  # None: $GOODPUT_RETRAIN_AFTER_DAYS, else 7
    window_days: int = analysis_default(LemonConfig, "window_days")
    min_signals: int = analysis_default(LemonConfig, "min_signals")
    expiry_days: int = analysis_default(LadderConfig, "expiry_days")
    clean_days: int = analysis_default(LadderConfig, "clean_days")
    repeat_min: int = analysis_default(LadderConfig, "repeat_min")
    risk_p7: float = analysis_default(LadderConfig, "risk_p7")
    max_drain_share: float = analysis_default(LadderConfig, "max_drain_share")
    max_drain_floor: int = analysis_default(LadderConfig, "max_drain_floor")
    # the nodes' scheduler, which scripts node_exports writes: slurm (drain.sh), kubernetes (kubectl.sh and
    # node_conditions.json), both, or auto: the scheduler whose jobs the warehouse holds (`goodput export
    # --platform`, docs/node-exports.md)
    export_platform: str = analysis_default(ExportConfig, "platform")
    # back in service after a critical incident no ticket closes (analysis.settings.LadderConfig)
    clean_checks: int = analysis_default(LadderConfig, "clean_checks")
    clean_jobs: int = analysis_default(LadderConfig, "clean_jobs")
    clean_job_hours: float = analysis_default(LadderConfig, "clean_job_hours")
    # repeat offenders: hardware incidents in a node's own history (analysis.settings.OffenderConfig)
    offender_days: int = analysis_default(OffenderConfig, "window_days")
    offender_p: float = analysis_default(OffenderConfig, "p")
    offender_min: int = analysis_default(OffenderConfig, "minimum")
    rma_repeats: int = analysis_default(OffenderConfig, "rma_repeats")

    def ladder(self):
        return LadderConfig(self.expiry_days, self.clean_days, self.repeat_min, self.risk_p7, self.max_drain_share,
                            self.max_drain_floor, clean_checks=self.clean_checks, clean_jobs=self.clean_jobs,
                            clean_job_hours=self.clean_job_hours,
                            offenders=OffenderConfig(self.offender_days, self.offender_p, self.offender_min,
                                                     self.rma_repeats))

    def labels_path(self, source_dir: str) -> Path:
        return Path(self.labels_file) if self.labels_file else Path(source_dir) / "labels" / "lemons.csv"

    def config(self, source_dir: str, db_path: str):
        from analysis.nodes.node_models import ModelsConfig

        return ModelsConfig(lemon=LemonConfig(window_days=self.window_days, min_signals=self.min_signals),
                            ladder=self.ladder(), labels_path=self.labels_path(source_dir),
                            model_dir=Path(db_path).resolve().parent / "models",
                            cadence=Cadence(retrain_after_days_default(self.retrain_after_days),
                                            scope=Path(db_path).name))


class CriteriaSettings(ConfigurableResource):
    """Benchmark criteria (Anubis §3.4): the required similarity alpha, the
    window of validation runs learned from, the repeatability floor that
    blocks the export, and an operator's metrics file ($GOODPUT_METRICS) tried
    before catalog/benchmark_metrics.yaml."""
    alpha: float = analysis_default(CriteriaConfig, "alpha")
    window_days: int = analysis_default(CriteriaConfig, "window_days")
    repeatability_floor: float = analysis_default(CriteriaConfig, "repeatability_floor")
    skip_noisy: bool = False
    metrics_file: str | None = Field(default_factory=lambda: os.environ.get("GOODPUT_METRICS") or None)

    def config(self):
        return CriteriaConfig(alpha=self.alpha, window_days=self.window_days,
                              repeatability_floor=self.repeatability_floor)


class TelemetrySettings(ConfigurableResource):
    """Faulty-machine detection from telemetry (Minder): windows, continuity and training. The detector is
    trained on the completed jobs telemetry covers, saved in models/ beside the warehouse, and retrained
    when retrain_after_days of new data have passed, or its input definition or metric set changed; a
    run in between only scores the jobs not scored yet (analysis.telemetry.run)."""
    window_s: int = analysis_default(FrameConfig, "window_s")
    stride_s: int = analysis_default(FrameConfig, "stride_s")
    continuity_s: int = analysis_default(DetectConfig, "continuity_s")
    epochs: int = analysis_default(TelemetryTraining, "epochs")
    max_train_jobs: int = analysis_default(TelemetryTraining, "max_train_jobs")
    min_train_jobs: int = analysis_default(TelemetryTraining, "min_train_jobs")
    lookback_days: float = analysis_default(TelemetryTraining, "lookback_days")  # re-judged after a retraining
    retrain_after_days: float | None = None  # None: $GOODPUT_RETRAIN_AFTER_DAYS, else 7

    def cadence(self, db_path: str, retrain: frozenset = frozenset()):
        return Cadence(retrain_after_days_default(self.retrain_after_days), retrain, Path(db_path).name)

    def config(self):
        return DetectConfig(frame=FrameConfig(window_s=self.window_s, stride_s=self.stride_s),
                            continuity_s=self.continuity_s)


class FleetSettings(ConfigurableResource):
    """Where a fleet's trees, warehouses and outputs are (pipelines/fleet_definitions.py, docs/fleet.md): a folder
    per cluster in each."""
    source_dir: str = Field(default_factory=lambda: os.environ.get("GOODPUT_FLEET_SOURCE", "fleet"))
    db_dir: str = Field(default_factory=lambda: os.environ.get("GOODPUT_FLEET_DB_DIR", str(FLEET_DB_DIR)))
    out_dir: str = Field(default_factory=lambda: os.environ.get("GOODPUT_OUT", str(RUN_OUT)))


def build_resources(db: Path | None = None, source: Path | None = None, out: Path | None = None, tz: str | None = None,
                    sacct_delimiter: str | None = None, boot_times: dict[str, str] | None = None,
                    rules_file: Path | None = None, models: ModelSettings | None = None,
                    telemetry: "TelemetrySettings | None" = None) -> dict:
    """The resources every asset runs with, by the keys the assets name them: the code location's (no argument:
    every setting's default, its environment variable read now) and `goodput run`'s (its options)."""
    return {"warehouse": Warehouse(db_path=str(db)) if db else Warehouse(),
            "models": models or ModelSettings(), "criteria": CriteriaSettings(),
            "telemetry_settings": telemetry or TelemetrySettings(), "settings": MetricsSettings(),
            "report_settings": ReportSettings(out_dir=str(out)) if out else ReportSettings(),
            "alert_settings": AlertSettings(),
            "taxonomy": TaxonomyConfig(rules_file=str(rules_file)) if rules_file else TaxonomyConfig(),
            "sources": LogSources(source_dir=str(Path(source).resolve()), tz=tz, sacct_delimiter=sacct_delimiter,
                                  boot_times=boot_times or {}) if source else LogSources()}
