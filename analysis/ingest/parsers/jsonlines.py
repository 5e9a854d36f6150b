"""JSON lines decoded in bulk, with a per-line verdict for the lines that do not decode.

polars decodes a whole column of JSON lines at once (``read_ndjson``, 10-20x
faster than ``json.loads`` per line plus a Python loop), but one bad line fails
the whole call. So:

1. lines deeper than MAX_DEPTH are rejected up front (vectorised bracket count;
   the exact depth is computed only for lines with more than MAX_DEPTH opening
   brackets), so no decoder ever recurses on hostile nesting;
2. lines that are not ``{...}`` go straight to step 4;
3. the rest is decoded in one call; when that fails, the block is halved until
   the failing lines are isolated in blocks of at most SMALL lines (one bad
   line costs about two more passes over the file, not one call per line);
4. lines of those small blocks are read by ``json.loads`` one by one, which
   also accepts NaN/Infinity (Python's json module writes them; SuperBench
   results hold them) and gives each bad line a reason an operator can act on.
"""
from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass, field

import polars as pl

from analysis.ingest.lines import empty_rejects, make_rejects

MAX_DEPTH = 64  # no real result line nests more than a few levels
SMALL = 64  # blocks this small are read line by line instead of halved again
_STRING = r'"(?:[^"\\]|\\.)*"'
_SURROGATE = re.compile(r"\\u[dD][89a-fA-F]")


class _TooLarge(ValueError):
    pass


@dataclass
class Decoded:
    frames: list[pl.DataFrame]  # decoded blocks: line_no plus one column per key (schemas may differ)
    objects: list[tuple[int, str, object]]  # (line_no, text, value) read by json.loads
    rejects: pl.DataFrame = field(default_factory=empty_rejects)


def decode(lines: pl.DataFrame, schema: dict[str, pl.DataType] | None = None, python: bool = False) -> Decoded:
    """``lines``: (line_no, text) of non-blank lines. ``schema``: the keys to
    read (others are ignored); None infers every key's type per block.
    ``python``: read every line with json.loads (for a few lines the caller
    needs exactly, e.g. where polars cannot tell a number from a string)."""
    text = pl.col("text").str.strip_chars()
    frame = lines.with_columns(
        obj=text.str.starts_with("{") & text.str.ends_with("}"),
        deep=pl.col("text").str.count_matches(r"[\[{]") > MAX_DEPTH)
    deep = frame.filter(pl.col("deep"))
    if deep.height:  # rare: the exact depth, brackets inside strings not counted
        depth = deep.select(pl.col("text").str.replace_all(_STRING, "").str.replace_all(r"[^\[\]{}]", "")
                            .str.split("").list.eval(pl.when(pl.element().is_in(["[", "{"])).then(1)
                                                     .otherwise(-1).cum_sum().max()).list.first())
        deep = deep.with_columns(deep=depth.to_series().fill_null(0) > MAX_DEPTH)
        frame = pl.concat([frame.filter(~pl.col("deep")), deep]).sort("line_no")
    too_deep = frame.filter(pl.col("deep"))
    frames: list[pl.DataFrame] = []
    slow: list[pl.DataFrame] = [frame.filter(~pl.col("obj") & ~pl.col("deep")).select("line_no", "text")]
    pending = [frame.filter(pl.col("obj") & ~pl.col("deep")).select("line_no", "text")]
    if python:
        slow, pending = slow + pending, []
    while pending:
        block = pending.pop()
        if not block.height:
            continue
        decoded = _read_block(block, schema)
        if decoded is not None:
            frames.append(decoded)
        elif block.height <= SMALL:
            slow.append(block)
        else:
            half = block.height // 2
            pending += [block.slice(half), block.slice(0, half)]
    objects, bad_no, bad_raw, bad_why = [], [], [], []
    for block in slow:
        for no, raw in block.iter_rows():
            value, why = _loads(raw)
            if why is None:
                objects.append((no, raw, value))
            else:
                bad_no.append(no), bad_raw.append(raw), bad_why.append(why)
    rejects = pl.concat([make_rejects(too_deep["line_no"], too_deep["text"],
                                      f"JSON nested deeper than {MAX_DEPTH} levels"),
                         make_rejects(bad_no, bad_raw, bad_why)]).sort("line_no")
    objects.sort(key=lambda o: o[0])
    return Decoded(frames, objects, rejects)


def _read_block(block: pl.DataFrame, schema) -> pl.DataFrame | None:
    data = block["text"].str.join("\n")[0].encode()
    try:
        out = pl.read_ndjson(data, schema=schema, infer_schema_length=None)
    except (pl.exceptions.PolarsError, pl.exceptions.PanicException, ValueError):
        return None  # some line in this block does not decode (or types conflict): halve it
    if out.height != block.height:  # a line holding two objects, or a reader quirk: never shift rows
        return None
    # polars orders inferred keys by hash; keep the order the first line writes them in
    first, _ = _loads(block["text"][0])
    order = [k for k in (first or {}) if k in out.columns]
    return out.select(*order, *[c for c in out.columns if c not in set(order)]).with_columns(block["line_no"])


def _int(s: str) -> int:
    if len(s) > 400:  # beyond any float; also stops int() on a huge digit string
        raise _TooLarge
    v = int(s)
    try:
        float(v)
    except OverflowError:
        raise _TooLarge from None
    return v


def _float(s: str) -> float:
    v = float(s)
    if math.isinf(v):
        raise _TooLarge
    return v


def _loads(raw: str) -> tuple[object, str | None]:
    """(value, None) or (None, reason)."""
    try:
        value = json.loads(raw, parse_int=_int, parse_float=_float)
    except _TooLarge:
        return None, "number too large (beyond the range of a 64-bit float)"
    except json.JSONDecodeError as exc:
        if exc.msg == "Extra data":
            return None, f"invalid JSON: text after the end of the object (character {exc.pos + 1})"
        if raw.lstrip().startswith("{") and not raw.rstrip().endswith("}"):
            return None, "invalid JSON: the line ends before the object is closed (cut off?)"
        return None, f"invalid JSON at character {exc.pos + 1} of {len(raw)}"
    except (ValueError, RecursionError):  # ValueError: e.g. a lone surrogate escape
        return None, "invalid JSON"
    if not isinstance(value, dict):
        return None, "not a JSON object ({...})"
    if _SURROGATE.search(raw):  # json.loads keeps a lone UTF-16 surrogate, which no UTF-8 column can hold
        try:
            json.dumps(value, ensure_ascii=False).encode("utf-8")
        except UnicodeEncodeError:
            return None, "invalid JSON: a \\u escape holds half of a UTF-16 surrogate pair"
    return value, None


def as_text(value) -> str | None:
    """A JSON value as text, the way polars reads it into a String column."""
    if value is None or isinstance(value, str):
        return value
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return str(value)
    return json.dumps(value, separators=(", ", ": "))
