"""Time handling shared by the parsers. Everything is stored as naive UTC."""
from __future__ import annotations

import polars as pl

from analysis.ingest.options import YEARS

MONTHS = {m: i + 1 for i, m in enumerate(
    ["jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec"])}

# Zone abbreviations that appear in switch and syslog stamps. Abbreviations are
# ambiguous in general (IST, CST); these are the usual data-centre meanings.
TZ_ABBREV_MINUTES = {
    "UTC": 0, "GMT": 0, "Z": 0, "WET": 0, "WEST": 60, "BST": 60, "CET": 60, "CEST": 120,
    "EET": 120, "EEST": 180, "MSK": 180, "IST": 330, "SGT": 480, "HKT": 480, "CST": -360,
    "CDT": -300, "EST": -300, "EDT": -240, "MST": -420, "MDT": -360, "PST": -480, "PDT": -420,
    "AKST": -540, "AKDT": -480, "HST": -600, "JST": 540, "KST": 540, "AEST": 600, "AEDT": 660,
    "ACST": 570, "ACDT": 630, "AWST": 480, "NZST": 720, "NZDT": 780,
}


def local_to_utc(expr: pl.Expr, tz: str) -> pl.Expr:
    """Naive local datetime -> naive UTC. DST gaps give NULL, folds the earlier time."""
    if tz.upper() in ("UTC", "Z", "GMT"):
        return expr
    return aware_to_naive_utc(expr.dt.replace_time_zone(tz, ambiguous="earliest", non_existent="null"))


def aware_to_naive_utc(expr: pl.Expr) -> pl.Expr:
    return expr.dt.convert_time_zone("UTC").dt.replace_time_zone(None)


def shift_by_abbrev(naive: pl.Expr, abbrev: pl.Expr, default_tz: str) -> pl.Expr:
    """Convert a naive stamp written in zone ``abbrev`` (e.g. 'AEST') to UTC;
    unknown or missing abbreviations fall back to ``default_tz``."""
    offset = abbrev.str.to_uppercase().replace_strict(
        TZ_ABBREV_MINUTES, default=None, return_dtype=pl.Int64)
    return pl.when(offset.is_not_null()).then(
        naive - pl.duration(minutes=offset)).otherwise(local_to_utc(naive, default_tz))


def month_number(expr: pl.Expr) -> pl.Expr:
    return expr.str.slice(0, 3).str.to_lowercase().replace_strict(MONTHS, default=None, return_dtype=pl.Int32)


def infer_year(month: pl.Expr, ref_year: int, ref_month: int) -> pl.Expr:
    """RFC 3164 stamps have no year. Take the year of the reference (the file's
    mtime or the configured year); a month later than the reference month
    belongs to the previous year (a December line in a log written in January)."""
    return pl.when(month > ref_month).then(ref_year - 1).otherwise(ref_year)


def parse_duration_s(expr: pl.Expr) -> pl.Expr:
    """Slurm durations: [D-]HH:MM:SS, MM:SS(.mmm), or a plain number of seconds."""
    parts = expr.str.extract_groups(
        r"^\s*(?:(?P<d>\d+)-)?(?:(?P<h>\d+):)?(?P<m>\d+):(?P<s>\d+)(?:\.\d+)?\s*$")
    days = parts.struct.field("d").cast(pl.Int64, strict=False).fill_null(0)
    hours = parts.struct.field("h").cast(pl.Int64, strict=False).fill_null(0)
    mins = parts.struct.field("m").cast(pl.Int64, strict=False)
    secs = parts.struct.field("s").cast(pl.Int64, strict=False)
    return ((days * 24 + hours) * 60 + mins) * 60 + secs


def in_years(t: pl.Expr) -> pl.Expr:
    """A time within the years a log of a real cluster can carry (analysis/ingest/options.py YEARS): a stamp
    of 9999, 1900 or an epoch of 99999999999999999999 (year 5138) is a reject, not an event."""
    return t.dt.year().is_between(*YEARS).fill_null(False)


def outside_years(t: pl.Expr, written: pl.Expr | None = None) -> pl.Expr:
    """The reject reason for a time ``in_years`` refuses: the time as written when the line has it as a
    number or text of its own (an epoch), else as read (UTC)."""
    shown = pl.format("'{}'", written) if written is not None else t.dt.strftime("%Y-%m-%d %H:%M:%S")
    return pl.format("time {} is outside the years {}-{}", shown, pl.lit(YEARS[0]), pl.lit(YEARS[1]))
