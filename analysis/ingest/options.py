"""Ingest options: ``goodput.yaml`` at the top of the source directory, then command-line overrides.

Every value is checked here, before any file is read: a typo in goodput.yaml
is one clear line naming the option, not a traceback half-way through a run.
"""
from __future__ import annotations

from dataclasses import fields
from datetime import date, datetime, timezone
from pathlib import Path
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

import yaml

from analysis.ingest.contract import IngestOptions

CONFIG_NAMES = ("goodput.yaml", "goodput.yml")
MAX_CONFIG_BYTES = 1 << 20  # an options file is a few lines; a bigger one is a mistake
YEARS = (1970, 2100)  # syslog_year: what a log of a real cluster can carry


class OptionsError(ValueError):
    """A bad option value; the message names the file and the option."""


def _naive_utc(t: datetime) -> datetime:
    return t.astimezone(timezone.utc).replace(tzinfo=None) if t.tzinfo else t


def _read_config(source_dir: Path) -> tuple[dict, str]:
    for name in CONFIG_NAMES:
        path = source_dir / name
        if not path.is_file():
            continue
        if path.stat().st_size > MAX_CONFIG_BYTES:
            raise OptionsError(f"{path}: {path.stat().st_size:,} bytes is too big for an options file")
        try:
            values = yaml.safe_load(path.read_text(errors="replace"))
        except yaml.YAMLError as exc:
            mark = getattr(exc, "problem_mark", None)
            where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark else ""
            problem = getattr(exc, "problem", None) or "not valid YAML"
            raise OptionsError(f"{path}: not valid YAML{where}: {problem}") from None
        if values is None:
            return {}, str(path)
        if not isinstance(values, dict):
            raise OptionsError(f"{path}: expected 'option: value' lines, got a {type(values).__name__}")
        return values, str(path)
    return {}, "options"


def _named_time(host, value, where: str, what: str = "boot time") -> tuple[str, datetime]:
    if isinstance(value, datetime):
        return str(host), _naive_utc(value)
    if isinstance(value, date):
        return str(host), datetime(value.year, value.month, value.day)
    try:
        return str(host), _naive_utc(datetime.fromisoformat(str(value).strip()))
    except ValueError:
        raise OptionsError(f"{where}: {what} of {host}: '{str(value)[:60]}' is not an ISO 8601 time "
                           "such as 2024-03-01T06:00:00Z") from None


def _times(values: dict, overrides: dict, key: str, where: str, flag: str, what: str, example: str) -> dict:
    """A name -> time option (boot_times, benchmark_run_times): goodput.yaml's, then the overrides'."""
    given = values.pop(key, None) or {}
    if not isinstance(given, dict):
        raise OptionsError(f"{where}: {key} must map {example}")
    times = dict(_named_time(k, t, where, what) for k, t in given.items())
    times.update(_named_time(k, t, flag, what) for k, t in (overrides.pop(key, None) or {}).items())
    return times


def _checked(name: str, value, annotation: str, where: str):
    """``value`` if it fits the IngestOptions field's annotation, else an OptionsError."""
    kinds = {k.strip() for k in annotation.split("|")}
    if value is None:
        if "None" in kinds:
            return None
        raise OptionsError(f"{where}: {name} needs a value")
    shown = repr(value)[:60]
    if "int" in kinds:
        if isinstance(value, bool) or not isinstance(value, int):
            raise OptionsError(f"{where}: {name} must be a whole number, got {shown}")
        if name == "syslog_year" and not YEARS[0] <= value <= YEARS[1]:
            raise OptionsError(f"{where}: syslog_year must be a year such as 2024, got {value}")
        if name.startswith("max_") and value <= 0:
            raise OptionsError(f"{where}: {name} must be positive, got {value}")
        return value
    if "str" in kinds:
        if not isinstance(value, str) or not value:
            hint = " (quote it: \"|\")" if name == "sacct_delimiter" else ""
            raise OptionsError(f"{where}: {name} must be a non-empty text{hint}, got {shown}")
        return value
    if "list[str]" in kinds:
        if not isinstance(value, list) or not value or not all(isinstance(v, str) and v for v in value):
            raise OptionsError(f"{where}: {name} must be a list of names, got {shown}")
        return value
    raise OptionsError(f"{where}: {name} cannot be set here")


def _price(value, where: str) -> dict | None:
    """price: {per_gpu_hour: 2.5, currency: USD, partitions: {name: price}}: numbers at or above 0, a currency code."""
    if value is None:
        return None
    if not isinstance(value, dict) or "per_gpu_hour" not in value:
        raise OptionsError(f"{where}: price must map per_gpu_hour (and optionally currency, partitions), e.g. "
                           "price: {per_gpu_hour: 2.5, currency: USD, partitions: {gpu-h100: 3.1}}")
    unknown = sorted(set(value) - {"per_gpu_hour", "currency", "partitions"})
    if unknown:
        raise OptionsError(f"{where}: price: unknown key(s) {', '.join(map(str, unknown))} (known: per_gpu_hour, currency, partitions)")

    def amount(v, what: str) -> float:
        if isinstance(v, bool) or not isinstance(v, (int, float)) or v < 0 or v != v:
            raise OptionsError(f"{where}: price: {what} must be a number of 0 or more, got '{str(v)[:40]}'")
        return float(v)

    currency = str(value.get("currency") or "USD")
    if not currency.isalpha() or len(currency) != 3:
        raise OptionsError(f"{where}: price: currency must be a 3-letter code such as USD, got '{currency[:20]}'")
    parts = value.get("partitions") or {}
    if not isinstance(parts, dict):
        raise OptionsError(f"{where}: price: partitions must map partition names to prices")
    return {"per_gpu_hour": amount(value["per_gpu_hour"], "per_gpu_hour"), "currency": currency.upper(),
            "partitions": {str(k): amount(v, f"partitions.{k}") for k, v in parts.items()}}


def load_options(source_dir: Path, **overrides) -> IngestOptions:
    """Options from ``goodput.yaml`` at the top of the source directory, then overrides.
    Raises OptionsError (a ValueError) with one line naming the file and the option."""
    values, where = _read_config(Path(source_dir))
    boot = _times(values, overrides, "boot_times", where, "--boot-time", "boot time",
                  "host names to times (gpu001: 2024-03-01T06:00:00Z)")
    runs = _times(values, overrides, "benchmark_run_times", where, "benchmark_run_times", "run time",
                  "run folders under benchmarks/ to times (nccl-run1: 2024-03-14T06:00:00Z)")
    price = _price(values.pop("price", None), where)
    known = {f.name: str(f.type) for f in fields(IngestOptions) if f.name not in ("boot_times", "benchmark_run_times")}
    unknown = sorted(str(k) for k in values if k not in known)
    if unknown:
        raise OptionsError(f"{where}: unknown option(s) {', '.join(unknown)} "
                           f"(known: boot_times, benchmark_run_times, {', '.join(known)})")
    checked = {k: _checked(k, v, known[k], where) for k, v in values.items()}
    checked.update({k: _checked(k, v, known.get(k, ""), f"--{k.replace('_', '-')}")
                    for k, v in overrides.items() if v is not None})
    if checked.get("sacct_delimiter") == "\\t":  # `--sacct-delimiter '\t'`: the shell passes backslash-t, not a tab
        checked["sacct_delimiter"] = "\t"
    options = IngestOptions(**checked, boot_times=boot, benchmark_run_times=runs, price=price)
    try:
        ZoneInfo(options.tz)
    except (ValueError, ZoneInfoNotFoundError):
        raise OptionsError(f"unknown time zone '{options.tz}' (use an IANA name such as Europe/Paris)") from None
    return options
