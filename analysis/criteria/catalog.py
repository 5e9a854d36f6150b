"""Metrics catalog: direction, unit and kind of each benchmark metric
(catalog/benchmark_metrics.yaml, an operator's file tried first)."""
from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

import polars as pl
import yaml

from analysis import package_files

CATALOG = package_files.catalog("benchmark_metrics.yaml")
KINDS = ("measure", "flag", "info")
DIRECTIONS = ("higher", "lower")
# The documented rule for metrics no entry names: a name that reads as a time
# is lower-is-better, anything else (throughput, bandwidth, flops) higher.
LOWER_BY_NAME = re.compile(r"(time|latency|(^|_)lat(_|$)|duration|overhead|(^|_)(us|ms|ns)(_|$))", re.IGNORECASE)


class CatalogError(ValueError):
    pass


@dataclass(frozen=True)
class MetricRule:
    pattern: re.Pattern
    kind: str
    direction: str | None
    unit: str | None
    pass_value: float | None


def _rules(path: Path) -> list[MetricRule]:
    try:
        doc = yaml.safe_load(Path(path).read_text())
    except (OSError, yaml.YAMLError) as exc:
        raise CatalogError(f"{path}: cannot read the metrics catalog ({getattr(exc, 'strerror', None) or exc})") from None
    out = []
    for i, m in enumerate((doc or {}).get("metrics") or []):
        where = f"{path}: metrics[{i}]"
        if not isinstance(m, dict) or not isinstance(m.get("match"), str):
            raise CatalogError(f"{where}: needs a 'match' regular expression")
        try:
            pattern = re.compile(m["match"])
        except re.error as exc:
            raise CatalogError(f"{where}: match {m['match']!r} is not a regular expression ({exc})") from None
        kind, direction = m.get("kind", "measure"), m.get("direction")
        if kind not in KINDS:
            raise CatalogError(f"{where}: kind must be one of {', '.join(KINDS)}, got {kind!r}")
        if kind == "measure" and direction not in DIRECTIONS:
            raise CatalogError(f"{where}: a measure needs direction higher or lower, got {direction!r}")
        passed = m.get("pass")
        if kind == "flag" and (not isinstance(passed, (int, float)) or isinstance(passed, bool)):
            raise CatalogError(f"{where}: a flag needs the number that means pass, e.g. pass: 0")
        out.append(MetricRule(pattern, kind, direction, m.get("unit"), float(passed) if kind == "flag" else None))
    return out


def load(override: Path | str | None = None) -> list[MetricRule]:
    """The operator's rules (if any) first, then the built-in catalog."""
    return (_rules(Path(override)) if override else []) + _rules(CATALOG)


def classify(names: list[str], rules: list[MetricRule]) -> pl.DataFrame:
    """name ("<benchmark>/<metric>") -> kind, direction, unit, pass_value, guessed."""
    rows = []
    for name in names:
        rule = next((r for r in rules if r.pattern.search(name)), None)
        if rule is None:
            metric = name.split("/", 1)[-1]
            rows.append((name, "measure", "lower" if LOWER_BY_NAME.search(metric) else "higher", None, None, True))
        else:
            rows.append((name, rule.kind, rule.direction, rule.unit, rule.pass_value, False))
    return pl.DataFrame(rows, schema={"name": pl.Utf8, "kind": pl.Utf8, "direction": pl.Utf8, "unit": pl.Utf8,
                                      "pass_value": pl.Float64, "guessed": pl.Boolean}, orient="row")
