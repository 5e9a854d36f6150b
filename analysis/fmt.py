"""Numbers as goodput prints them, in the terminal and in the reports: one module, so that a value reads the
same in `goodput ettr`, `goodput sql`, `goodput criteria` and the HTML reports (reports/render.py registers
fmt_num and fmt_pct as the templates' `num` and `pct` filters). No import beyond the standard library: the
commands that print numbers load in a fraction of a second."""
from __future__ import annotations

import math

NA = "n/a"  # a number that is not known (None, NaN)
PLACES = 4  # at most this many decimals for a number whose scale is not known (a query's column)


def _missing(value) -> bool:
    return value is None or value != value  # value != value: NaN (a float, numpy's, a Decimal)


def fmt_num(value, digits: int = 0) -> str:
    """A number with a fixed number of decimals and thousands separators: 2,417 or 2,417.5 (digits=1)."""
    return NA if _missing(value) else f"{value:,.{digits}f}"


def fmt_pct(value, digits: int = 1) -> str:
    """A share (0.25) as a percentage: 25.0%."""
    return NA if _missing(value) else f"{100 * value:.{digits}f}%"


def fmt_float(value: float, places: int = PLACES, sep: bool = False) -> str:
    """A float whose scale is not known: at most ``places`` decimals, trailing zeros dropped (0.8571, 92.8421,
    2417.5, 3), never a raw repr (0.8571428571428571); a value too small for them in scientific notation with
    ``places`` significant digits (1.235e-07) rather than 0; NaN and infinities as DuckDB prints them. ``sep``:
    thousands separators (2,417.5): for prose, not for values a user pastes back into SQL."""
    if math.isnan(value):
        return "nan"
    if math.isinf(value):
        return "inf" if value > 0 else "-inf"
    if value != 0 and abs(value) < 0.5 * 10 ** -places:
        return f"{value:.{places}g}"
    text = f"{value:{',' if sep else ''}.{places}f}".rstrip("0").rstrip(".")
    return "0" if text == "-0" else text
