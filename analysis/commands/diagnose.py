"""What a user reads when a run goes wrong: failing checks as the files, the
reject reason and the fix; crashed steps as one line; input that produced
nothing usable (a misnamed folder, step-only sacct dumps, hosts Slurm never
saw) as loud warnings."""
from __future__ import annotations

import difflib
from collections import Counter
from datetime import date, datetime
from pathlib import Path

import duckdb
import polars as pl

from analysis import sql
from analysis.hints import follow_up, warehouse_of
from analysis.display import printable
from analysis.ingest.engine import discover
from analysis.ingest.one_file import link_refusal
from analysis.sources import JOBS_FROM, SOURCES, alias

SHOWN = 5  # files listed per problem; the rest are counted


def forget_hint(db: Path | None = None) -> str:
    """How to take a deleted file's rows out of the warehouse ``db`` (hints.follow_up: --db when not the default)."""
    return f"`{follow_up('forget', 'PATH', db=db)}` removes the rows of a file you deleted"


def _more(n: int) -> list[str]:
    return [f"  ... and {n - SHOWN} more"] if n > SHOWN else []


# -- check results: the description a failing check carries ------------------

def all_rejected(bad: pl.DataFrame, folder: str, db: Path | None = None) -> str:
    """``db``: the warehouse, so that the forget hint names it."""
    lines = [f"every line of {bad.height} file(s) under {folder}/ was rejected:"]
    for r in bad.head(SHOWN).iter_rows(named=True):
        lines.append(printable(f"  {r['path']}: {r['rejects']} of {r['lines']} lines rejected: "
                               f"{r['reason'] or 'no reason recorded'}"))
    lines += _more(bad.height)
    lines.append("  Fix the file or the options (--tz, --sacct-delimiter, --boot-time, goodput.yaml) and run again: "
                 f"a file is re-read when it, its options or its .boottime change; {forget_hint(db)}.")
    return "\n".join(lines)


def unaccounted(bad: pl.DataFrame, folder: str) -> str:
    lines = [f"{bad.height} file(s) under {folder}/ read in this run lost lines (a goodput bug: please report it "
             "with the file):"]
    for r in bad.head(SHOWN).iter_rows(named=True):
        lines.append(f"  {printable(r['path'])}: {r['lines']} lines = {r['row_lines']} with rows + {r['rejects']} rejected + "
                     f"{r['skipped']} skipped + {r['merged']} merged; stored: {r['stored_lines']} lines with rows, "
                     f"{r['rejected_lines']} rejects")
    return "\n".join(lines + _more(bad.height))


def missing_sources(missing: pl.DataFrame, day: date) -> str:
    names = ", ".join(f"{r['source']} (rows on {r['days_with_rows']} of the 7 days before)"
                      for r in missing.iter_rows(named=True))
    return (f"no rows on {day} from {names}: that day's files are missing or late; add them to the source "
            "directory and run again")


def volume_drops(drops: pl.DataFrame, day: date) -> str:
    return "; ".join(f"{r['source']}: {r['rows']:,} rows on {day}, far below its 7-day median of {r['median_rows']:,.0f}"
                     for r in drops.iter_rows(named=True)) + " (files missing or late?)"


def high_reject_rate(con: duckdb.DuckDBPyConnection, rejecting: pl.DataFrame, since: datetime) -> str | None:
    """None when no source rejected more than its limit (``rejecting``: analysis.commands.data_health.rejecting);
    else each such source, and the files with the most rejects with their main reason."""
    if rejecting.height == 0:
        return None
    lines = [f"{r['source']}/: {r['reason']}" for r in rejecting.iter_rows(named=True)]
    lines.append("most rejects:")
    for r in sql.query(con, "ops/reject_rate_top_files", {"since": since, "limit": SHOWN}).iter_rows(named=True):
        lines.append(printable(f"  {r['path']}: {r['rejects']:,} of {r['lines']:,} lines rejected, mostly: {r['reason']}"))
    listing = follow_up("sql", "SELECT reason, count(*) FROM rejects GROUP BY ALL ORDER BY 2 DESC", db=warehouse_of(con))
    lines.append(f"  Fix the files or the options and run again; `{listing}` lists every reason.")
    return "\n".join(lines)


# -- run results ----------------------------------------------------------------

def check_failure(evaluation) -> str:
    """One FAILED/WARNING entry for a check: its description, else its metadata."""
    name = f"{evaluation.asset_key.to_user_string()}.{evaluation.check_name}"
    text = getattr(evaluation, "description", None)
    if not text:
        text = ", ".join(f"{k}: {getattr(v, 'value', v)}" for k, v in (evaluation.metadata or {}).items()) or "failed"
    return f"check {name}: {text}"


def step_failure(event) -> tuple[str, str] | None:
    """(one line, full trace) for a step that raised; None for a blocking check's
    failure, which its check evaluation already explains."""
    error = event.step_failure_data.error if event.step_failure_data else None
    if error is None:
        return f"step {event.step_key} failed", ""
    if error.cls_name == "DagsterAssetCheckFailedError":
        return None
    if error.cls_name == "DagsterExecutionInterruptedError":  # Ctrl-C (SIGINT): Dagster stops the step there
        return (f"step {event.step_key} interrupted (SIGINT, Ctrl-C): it and the steps after it were not built; "
                "run again to build them"), error.to_string()
    inner = error
    while inner.cause is not None:  # Dagster wraps the asset's own exception
        inner = inner.cause
    message = " ".join(inner.message.split("\n")[:2]).strip()
    return f"step {event.step_key} failed: {message[:400]}", error.to_string()


# -- input that produced nothing usable -----------------------------------------

def unknown_folders(source_dir: Path) -> list[str]:
    """Files goodput does not read because of where they are."""
    folders = Counter()
    for path, source in discover(source_dir):
        if source is None and not link_refusal(path, source_dir):  # a refused link is reported as such
            rel = path.relative_to(source_dir).parts
            folders[rel[0] + "/" if len(rel) > 1 else "(top level)"] += 1
    out = []
    for folder, n in sorted(folders.items()):
        if folder == "(top level)":
            out.append(f"{n} file(s) at the top of {printable(source_dir)} were not read: put each in its source folder "
                       f"({', '.join(s + '/' for s in SOURCES)})")
            continue
        name = folder.rstrip("/").lower()
        # the folder names people use for a source (its declared aliases), else one difflib finds close
        guess = alias(name) or next(iter(difflib.get_close_matches(name, list(SOURCES), n=1, cutoff=0.6)), None)
        hint = f": did you mean {guess}/?" if guess else f": goodput reads {', '.join(s + '/' for s in SOURCES)}"
        out.append(f"{n} file(s) in folder {printable(folder)} were not read, it is not a source folder{hint}")
    return out


def coverage(con: duckdb.DuckDBPyConnection, source_dir: Path, since: datetime) -> tuple[list[str], str | None]:
    """Warnings about input that ingested but yields nothing usable, and the
    reason to fail the run (None: no reason) when no source produced a row."""
    warnings = unknown_folders(source_dir)
    totals = {r["source"]: r for r in sql.query(con, "ops/run_source_totals").iter_rows(named=True)}
    if not any(r["rows"] for r in totals.values()):
        seen = sum(r["files"] for r in totals.values())
        return warnings, (f"none of the {seen} file(s) in source folders produced a row: nothing to analyse; see "
                          "the problems and warnings above")
    if not any(totals.get(folder, {}).get("rows") for folder in JOBS_FROM):
        warnings.append("no Slurm accounting: put `sacct` dumps in slurm/ (or, on a Kubernetes cluster, its pods and "
                        "workloads in kubernetes/); without jobs there are no failure rates, attribution, ETTR or goodput")
    steps = sql.query(con, "ops/run_step_only_sacct", {"since": since})
    for r in steps.head(SHOWN).iter_rows(named=True):
        warnings.append(f"{printable(r['path'])}: {r['row_lines']:,} job-step lines and no job allocation line, so no job was "
                        "built from it: dump the allocation lines too (plain `sacct`, or `sacct -X` for allocations only)")
    warnings += _more(steps.height)
    if totals.get("slurm", {}).get("rows") and _jobs(con) == 0:
        warnings.append("the slurm/ dumps hold no job allocation line: 0 jobs, so no failure rates, attribution or goodput")
    hosts = sql.query(con, "ops/run_unmatched_host_files", {"since": since})
    if hosts.height:
        examples = "; ".join(printable(f"{r['path']} -> '{r['host_hint']}'") for r in hosts.head(SHOWN).iter_rows(named=True))
        warnings.append(f"{hosts.height} file(s) took their host from the file name, and no Slurm job or node event names that host "
                        f"({examples}{'; ...' if hosts.height > SHOWN else ''}): their rows attach to no job; name "
                        "per-host files after the node (kernel/gpu001.log or kernel/gpu001/dmesg.log)")
    return warnings, None


def _jobs(con: duckdb.DuckDBPyConnection) -> int | None:
    try:
        return sql.count(con, "jobs")
    except duckdb.CatalogException:  # the jobs asset never ran on this warehouse
        return None
