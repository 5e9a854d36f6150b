"""Repair of sacct rows whose field count is wrong.

Only the rows with the wrong count pass through here (a handful per dump), so
plain Python is fine. Two faults are repaired when the fix is unambiguous:

* a newline inside a field splits one row over several lines: consecutive
  short lines whose field counts add up (n1 + n2 - 1 = expected) are joined;
* a delimiter inside a free-text field (JobName, SubmitLine, ...) gives extra
  fields: they are folded back into the free-text field, trying each free-text
  column present and keeping the placement for which every typed column
  (JobID, State, times, ExitCode, NNodes, Elapsed) still parses. Zero or
  several valid placements: the row is rejected as ambiguous.
"""
from __future__ import annotations

import re

import polars as pl

from analysis.ingest.lines import empty_rejects, make_rejects
from analysis.ingest.parsers.batched import FILE

# Slurm job ids are 32-bit; 18 digits is the most an Int64 column holds.
JOBID_RE = r"^(?P<base>\d{1,18})(?:_(?P<task>\d{1,18}|\[[^\]]*\]))?(?:\+(?P<het>\d{1,9}))?(?:\.(?P<step>[A-Za-z0-9_+-]+))?$"
FREE_TEXT = ("jobname", "submitline", "comment", "admincomment", "systemcomment", "workdir",
             "constraints", "reason", "container", "extra")
_TIME = re.compile(r"^(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d|Unknown|None|)$")
_CHECKS = {
    "jobid": re.compile(JOBID_RE), "jobidraw": re.compile(r"^(\d+(\.\S+)?|)$"),
    "state": re.compile(r"^([A-Z_]+(\+|\*)?( by \d+)?|)$"), "exitcode": re.compile(r"^(-?\d+:-?\d+|)$"),
    "nnodes": re.compile(r"^\d*$"), "elapsed": re.compile(r"^((\d+-)?\d+:\d\d:\d\d|INVALID|)$"),
    "submit": _TIME, "eligible": _TIME, "start": _TIME, "end": _TIME,
}


def _valid(fields: list[str], names: dict[str, int]) -> bool:
    return all(rx.match(fields[names[col]]) for col, rx in _CHECKS.items() if col in names)


def _fold_extras(fields: list[str], names: dict[str, int], delim: str, ncols: int) -> tuple[list[str] | None, str]:
    extra = len(fields) - ncols
    placements = []
    for col in FREE_TEXT:
        if col not in names:
            continue
        k = names[col]
        candidate = fields[:k] + [delim.join(fields[k:k + extra + 1])] + fields[k + extra + 1:]
        if _valid(candidate, names):
            placements.append((col, candidate))
    if len(placements) == 1:
        return placements[0][1], ""
    if not placements:
        return None, f"{len(fields)} fields, expected {ncols}, and no free-text field can hold the extra delimiters"
    cols = ", ".join(c for c, _ in placements)
    return None, f"{len(fields)} fields, expected {ncols}: the extra '{delim}' could belong to any of {cols}"


def repair_rows(bad: pl.DataFrame, body: pl.DataFrame, columns: list[str], names: dict[str, int],
                delim: str) -> tuple[pl.DataFrame, pl.DataFrame, dict[int, int]]:
    """Return (repaired rows as (line_no, fields), rejects, fid -> lines merged). A row borrows lines of
    its own segment only (``seg``: a file, or the part of a file under one header)."""
    empty = pl.DataFrame(schema={"line_no": pl.Int64, "fields": pl.List(pl.Utf8)})
    if bad.height == 0:
        return empty, empty_rejects(), {}
    ncols = len(columns)
    # Work on the non-blank body in order, so a split row can borrow the lines
    # that follow it; only positions flagged bad start a repair, so only the
    # lines a repair can reach are taken out of polars.
    body = body.with_row_index("pos")
    starts = body.filter(pl.col("line_no").is_in(bad["line_no"].implode()))["pos"].cast(pl.Int64)
    reach = pl.int_ranges(starts, starts + MAX_JOINED_LINES + 1, eager=True).explode().unique()
    body = body.filter(pl.col("pos").is_in(reach.implode()))
    line_nos = body["line_no"].to_list()
    texts = body["text"].to_list()
    counts = body["n"].to_list()
    segs = body["seg"].to_list()
    positions = body["pos"].to_list()
    pos_of = {ln: i for i, ln in enumerate(line_nos)}
    out_no, out_fields, rej_no, rej_raw, rej_reason = [], [], [], [], []
    merged: dict[int, int] = {}
    consumed: set[int] = set()
    for ln in bad["line_no"].to_list():
        i = pos_of[ln]
        if i in consumed:
            continue
        if counts[i] > ncols:
            fields, why = _fold_extras(texts[i].split(delim), names, delim, ncols)
        else:
            fields, why, j = _join_split(i, texts, counts, segs, positions, ncols, delim, names)
            if fields is not None:
                consumed.update(range(i + 1, j + 1))
                merged[ln // FILE] = merged.get(ln // FILE, 0) + j - i
        if fields is None:
            rej_no.append(ln)
            rej_raw.append(texts[i])
            rej_reason.append(why)
        else:
            out_no.append(ln)
            out_fields.append(fields)
    repaired = pl.DataFrame({"line_no": out_no, "fields": out_fields}, schema=empty.schema)
    rejects = make_rejects(rej_no, rej_raw, rej_reason) if rej_no else empty_rejects()
    return repaired, rejects, merged


# A field with newlines rarely spans more than a few lines; the cap keeps a dump
# in the wrong delimiter (every line one field) linear instead of quadratic.
MAX_JOINED_LINES = 64


def _join_split(i, texts, counts, segs, positions, ncols, delim, names):
    """Join line i with the lines after it (in its segment) while the field count stays <= ncols."""
    total, j = counts[i], i
    while (total < ncols and j + 1 < len(texts) and segs[j + 1] == segs[i] and positions[j + 1] == positions[j] + 1
           and j - i < MAX_JOINED_LINES
           and counts[j + 1] < ncols
           and total + counts[j + 1] - 1 <= ncols):
        j += 1
        total += counts[j] - 1
    if total == ncols and j > i:
        fields = "\n".join(texts[i:j + 1]).split(delim)
        if _valid(fields, names):
            return fields, "", j
        return None, "lines join to the right field count but typed fields do not parse", i
    if counts[i] == 1:
        return None, (f"no '{delim}' delimiter: not a sacct row (and not the continuation of a quoted"
                      " SubmitLine)"), i
    return None, f"truncated row: {counts[i]} of {ncols} fields", i
