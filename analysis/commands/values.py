"""Warehouse values as `goodput sql` prints them: cells for the table and -x (NULL for a missing value, floats
with at most 4 decimals: analysis.fmt), text for CSV (every DuckDB type, even those polars cannot hold, floats
in full), and JSON's own types for --json with times in ISO 8601."""
from __future__ import annotations

from datetime import date, datetime, time, timedelta

from analysis.fmt import fmt_float

NULL = "NULL"  # a missing value in the table and in -x (CSV leaves the field empty, JSON writes null)


def as_json(value):
    """JSON's own types where it has them; times in ISO 8601 (2024-03-01T10:00:00, durations P1DT2H3M4S);
    the rest (decimals, UUIDs, ...) as text."""
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    if isinstance(value, (list, tuple)):
        return [as_json(v) for v in value]
    if isinstance(value, dict):  # STRUCT, MAP
        return {str(k): as_json(v) for k, v in value.items()}
    if isinstance(value, (datetime, date, time)):
        return value.isoformat()
    if isinstance(value, timedelta):
        return iso_duration(value)
    return as_text(value)


def iso_duration(delta: timedelta) -> str:
    """An INTERVAL as an ISO 8601 duration: P1DT2H3M4.5S, -PT30S, PT0S."""
    micros = abs(delta) // timedelta(microseconds=1)
    days, micros = divmod(micros, 86_400 * 10**6)
    hours, micros = divmod(micros, 3_600 * 10**6)
    minutes, micros = divmod(micros, 60 * 10**6)
    seconds = f"{micros / 1e6:f}".rstrip("0").rstrip(".")
    clock = (f"{hours}H" if hours else "") + (f"{minutes}M" if minutes else "") + (f"{seconds}S" if micros else "")
    body = (f"{days}D" if days else "") + (f"T{clock}" if clock else "")
    return ("-" if delta < timedelta(0) else "") + "P" + (body or "T0S")


def as_text(value) -> str:
    """CSV's text: every digit a float has (a file is read back by programs)."""
    if isinstance(value, list):
        return "[" + ", ".join(NULL if v is None else str(v) for v in value) + "]"
    return str(value)


def as_cell(value) -> str:
    """What the table and -x show: NULL for a missing value, inside lists and structs too; a float with at most
    4 decimals (0.8571, not 0.8571428571428571); the rest as text."""
    if value is None:
        return NULL
    if isinstance(value, float):
        return fmt_float(value)
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(as_cell(v) for v in value) + "]"
    if isinstance(value, dict):  # STRUCT, MAP
        return "{" + ", ".join(f"{k}: {as_cell(v)}" for k, v in value.items()) + "}"
    return str(value)
