"""Each setting's default is defined once, in the analysis settings dataclasses (analysis/settings.py): every
Dagster resource field and every command-line option with a value default either reads it from there
(assets.resources.analysis_default, pipelines.cli.common.SettingOption) or is listed below as its door's own,
and a setting both doors expose has the same default in both (issue 35)."""
from __future__ import annotations

import dataclasses
import re
from pathlib import Path

import click
from dagster import ConfigurableResource

import assets.resources as resources
from analysis import settings
from pipelines.cli.app import main
from pipelines.cli.common import SettingOption

# Resource fields that are no analysis setting: where things are (read from the environment when the resource
# is built), what the operator names, and None meaning "from the environment, else the analysis default".
RESOURCE_ONLY = {
    "Warehouse": {"db_path"},
    "LogSources": {"source_dir", "tz", "sacct_delimiter", "boot_times", "benchmark_run_times"},
    "TaxonomyConfig": {"rules_file"},
    "MetricsSettings": {"overrides_file"},
    "ReportSettings": {"out_dir"},
    "AlertSettings": {"alertmanager_url"},
    "ModelSettings": {"labels_file", "retrain_after_days"},  # None: $GOODPUT_RETRAIN_AFTER_DAYS, else Cadence's
    "CriteriaSettings": {"skip_noisy", "metrics_file"},
    "TelemetrySettings": {"retrain_after_days"},
    "FleetSettings": {"source_dir", "db_dir", "out_dir"},
}
# Command-line options with a value default that is the command's own (no analysis setting, no resource).
CLI_ONLY = {
    ("check", "sample_rows"), ("sql", "max_rows"), ("sql", "timeout"), ("run", "jobs"),
    # `goodput ettr`'s what-if inputs: a job size, a failure rate, a queue time and a target to sweep for
    ("ettr", "gpus"), ("ettr", "failure_rate"), ("ettr", "queue_min"), ("ettr", "target"),
}
DESCRIBED = re.compile(r"^(\w+)\.(\w+)(?: / (\d+))?$")  # analysis_default's description: "CriteriaConfig.alpha / 60"


def _analysis_default(cls_name: str, name: str, per: int):
    cls = getattr(settings, cls_name)
    assert dataclasses.is_dataclass(cls), cls_name
    (found,) = [f for f in dataclasses.fields(cls) if f.name == name]
    assert found.default is not dataclasses.MISSING, f"{cls_name}.{name} has no plain default"
    return found.default / per if per != 1 else found.default


def _resource_classes() -> list[type]:
    return [c for c in vars(resources).values()
            if isinstance(c, type) and issubclass(c, ConfigurableResource) and c.__module__ == resources.__name__]


def resource_settings() -> dict[tuple[str, str], tuple[str, str, int, object]]:
    """(resource, field) -> (settings class, its field, per, the resource's default), for every field that
    reads an analysis default."""
    out = {}
    for cls in _resource_classes():
        for name, info in cls.model_fields.items():
            match = DESCRIBED.match(info.description or "")
            if match:
                out[cls.__name__, name] = (match[1], match[2], int(match[3] or 1), info.default)
    return out


def cli_settings() -> dict[tuple[str, str], tuple[str, str, int, object]]:
    out = {}
    for command in main.commands.values():
        for param in command.params:
            if isinstance(param, SettingOption):
                cls, name, per = param.setting
                out[command.name, param.name] = (cls.__name__, name, per, param.default)
    return out


def test_every_resource_field_reads_an_analysis_default_or_is_the_resources_own():
    classes = {c.__name__: c for c in _resource_classes()}
    assert set(RESOURCE_ONLY) <= set(classes), "a listed resource is gone"
    described = resource_settings()
    for cls_name, cls in classes.items():
        for name in cls.model_fields:
            own = name in RESOURCE_ONLY.get(cls_name, set())
            assert own != ((cls_name, name) in described), (
                f"{cls_name}.{name}: read its default from analysis/settings.py (analysis_default) or list it "
                f"in RESOURCE_ONLY" if not own else f"{cls_name}.{name} is listed as the resource's own")
    for (cls_name, name), (settings_cls, field, per, default) in described.items():
        assert default == _analysis_default(settings_cls, field, per), (cls_name, name)
        assert type(default) is type(_analysis_default(settings_cls, field, per)) or per != 1


def test_every_value_option_reads_an_analysis_default_or_is_the_commands_own():
    found = cli_settings()
    for command in main.commands.values():
        for param in command.params:
            key = (command.name, param.name)
            valued = (isinstance(param, click.Option) and not param.is_flag and not param.multiple
                      and isinstance(param.default, (int, float, str)) and not isinstance(param.default, bool))
            choice_or_number = valued and (isinstance(param.default, (int, float)) or isinstance(param.type, click.Choice))
            if key in found:
                settings_cls, field, per, default = found[key]
                assert default == _analysis_default(settings_cls, field, per), key
            elif choice_or_number:
                assert key in CLI_ONLY, f"goodput {key[0]} --{key[1]}: a default not read from analysis/settings.py"
    assert all(k in {(c.name, p.name) for c in main.commands.values() for p in c.params} for k in CLI_ONLY)


def test_a_setting_both_doors_expose_has_one_default():
    by_setting: dict[tuple[str, str, int], set] = {}
    for where in (resource_settings(), cli_settings()):
        for settings_cls, field, per, default in where.values():
            by_setting.setdefault((settings_cls, field, per), set()).add(default)
    assert {k: v for k, v in by_setting.items() if len(v) > 1} == {}
    both = set(s[:3] for s in resource_settings().values()) & set(s[:3] for s in cli_settings().values())
    # the criteria's alpha, window and floor; the lemon window; u0 and Δt; the nodes' platform
    assert {("CriteriaConfig", "alpha", 1), ("LemonConfig", "window_days", 1), ("MetricsConfig", "dt_s", 60),
            ("MetricsConfig", "u0_s", 60), ("ExportConfig", "platform", 1)} <= both


def test_the_analysis_functions_take_the_same_defaults():
    """The analysis functions' own keyword defaults are the settings' too (no second literal)."""
    import inspect

    from analysis.alerts import alertmanager
    from analysis.commands import data_health
    from analysis.derive import attribution
    from analysis.nodes import scripts
    from analysis.telemetry import run as telemetry_run

    params = inspect.signature(telemetry_run.run).parameters
    for name in ("max_train_jobs", "min_train_jobs", "epochs"):
        assert params[name].default == getattr(settings.TelemetryTraining, name)
    assert inspect.signature(attribution.build_job_runs).parameters["gap_s"].default == settings.RunsConfig.run_gap_s
    assert data_health.MAX_REJECT_RATE == settings.HealthConfig.max_reject_rate
    assert alertmanager.TIMEOUT_S == settings.HealthConfig.alert_timeout_s
    assert scripts.DEFAULT_MAX_AGE_HOURS == settings.ExportConfig.max_age_hours
    assert settings.LadderConfig.benchmark_window_days == settings.CriteriaConfig.window_days


def _doc_resource_rows() -> dict[str, str]:
    text = (Path(__file__).resolve().parents[1] / "docs" / "operations.md").read_text()
    table = text.split("### Resources", 1)[1].split("\n## ", 1)[0]
    return {m[1]: m[2] for m in re.finditer(r"^\| `(\w+)` \| (.*) \|$", table, re.M)}


def test_the_operations_guide_lists_every_resource_setting_with_its_default():
    """docs/operations.md#resources is what an operator sets in the launchpad: every resource the assets take
    (build_resources), every field of it, and each plain default as the code has it (one home: the analysis
    settings, read by the resources)."""
    rows = _doc_resource_rows()
    built = resources.build_resources()
    assert set(rows) == set(built), "docs/operations.md#resources and build_resources() name different resources"
    for key, resource in built.items():
        for name, info in type(resource).model_fields.items():
            assert f"`{name}`" in rows[key], f"{key}.{name} is not in docs/operations.md#resources"
            default = info.default
            if isinstance(default, str):
                assert f"`{name}` (`{default}`" in rows[key], (key, name, default)
            elif isinstance(default, bool):
                assert f"`{name}` ({str(default).lower()}" in rows[key], (key, name, default)
            elif isinstance(default, (int, float)):
                said = re.search(rf"`{name}` \((?:[^)]*?, )?(-?[\d.]+)[,:)]", rows[key])
                assert said and float(said[1]) == default, f"{key}.{name}: the docs say {said and said[1]}, the code {default}"
