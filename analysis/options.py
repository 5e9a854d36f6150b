"""Ingest options: ``goodput.yaml`` at the top of the source directory, then command-line overrides."""
from __future__ import annotations

from datetime import datetime, timezone
from pathlib import Path
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

import yaml

from analysis.model import IngestOptions

CONFIG_NAMES = ("goodput.yaml", "goodput.yml")


def _naive_utc(t: datetime) -> datetime:
    return t.astimezone(timezone.utc).replace(tzinfo=None) if t.tzinfo else t


def load_options(source_dir: Path, **overrides) -> IngestOptions:
    """Options from ``goodput.yaml`` at the top of the source directory, then overrides."""
    values: dict = {}
    for name in CONFIG_NAMES:
        if (source_dir / name).is_file():
            values = yaml.safe_load((source_dir / name).read_text()) or {}
            break
    extra_boots = overrides.pop("boot_times", None) or {}
    values.update({k: v for k, v in overrides.items() if v is not None})
    values["boot_times"] = {**(values.get("boot_times") or {}), **extra_boots}
    try:
        boot = {str(h): _naive_utc(t if isinstance(t, datetime) else datetime.fromisoformat(str(t)))
                for h, t in values.pop("boot_times").items()}
    except ValueError as exc:
        raise ValueError(f"boot time: {exc}") from None
    known = IngestOptions.__dataclass_fields__
    unknown = set(values) - set(known)
    if unknown:
        raise ValueError(f"unknown option(s) in {source_dir}/goodput.yaml: {', '.join(sorted(unknown))}")
    options = IngestOptions(**values, boot_times=boot)
    try:
        ZoneInfo(options.tz)
    except (ValueError, ZoneInfoNotFoundError):
        raise ValueError(f"unknown time zone '{options.tz}' (use an IANA name such as Europe/Paris)") from None
    return options
