"""`goodput check`: read a source directory exactly as `goodput run` would, into a throwaway warehouse,
and say per folder what was found: formats detected, lines, rows, rejects with their reasons, sample
rows, and hosts that match no Slurm node. Nothing is written to the real warehouse."""
from __future__ import annotations

import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from typing import Callable

import duckdb
import polars as pl

from analysis import sql, warehouse
from analysis.commands import data_health
from analysis.derive.jobs import build_jobs
from analysis.display import printable
from analysis.ingest.contract import IngestOptions
from analysis.ingest.engine import ingest_directory
from analysis.sources import SOURCES



@dataclass
class FolderCheck:
    folder: str
    verdict: str  # ok | warning | failed
    files: int
    lines: int
    rows: int
    rejects: int
    formats: list[str]
    problems: list[str] = field(default_factory=list)  # one line each: what is wrong and where
    warnings: list[str] = field(default_factory=list)  # one line each: why `goodput run` would be degraded by it
    reject_reasons: list[dict] = field(default_factory=list)  # reason, lines, example (file:line: raw)
    sample: list[dict] = field(default_factory=list)
    unmatched_hosts: list[str] = field(default_factory=list)


def check_directory(source_dir: Path, options: IngestOptions | None = None, sample_rows: int = 3,
                    warnings: Callable[[duckdb.DuckDBPyConnection], list[str]] | None = None
                    ) -> tuple[list[FolderCheck], list[str]]:
    """Per-folder verdicts, and ``warnings(con)`` over the throwaway warehouse (the run's own coverage
    warnings: step-only sacct dumps, hosts taken from file names that no job names)."""
    source_dir = Path(source_dir)
    with tempfile.TemporaryDirectory(prefix="goodput-check-") as tmp:
        con = warehouse.connect(Path(tmp) / "check.duckdb")
        try:
            summary = ingest_directory(con, source_dir, options)
            build_jobs(con)
            return _folders(con, summary.outcomes, source_dir, sample_rows), (warnings(con) if warnings else [])
        finally:
            con.close()


def _folders(con, outcomes, source_dir: Path, sample_rows: int) -> list[FolderCheck]:
    files = sql.query(con, "ingest/check_files")
    slurm_hosts = set(sql.query(con, "ingest/check_slurm_hosts")["host"].to_list())
    # the run's own rule (analysis.commands.data_health): over 2% of a source's lines and 20 lines rejected
    rejecting = dict(data_health.rejecting(con, None).select("source", "reason").iter_rows())
    out = []
    unknown = [o for o in outcomes if o.source is None]
    if unknown:
        out.append(FolderCheck("(other)", "failed", len(unknown), 0, 0, 0, [],
                               [f"{_rel(o.path, source_dir)}: {o.message}" for o in unknown]))
    for source in SOURCES:
        mine = files.filter(pl.col("source") == source)
        if mine.height == 0:
            continue
        bad = mine.filter(~pl.col("status").is_in(["ok", "unchanged", "duplicate"]))
        problems = [f"{_rel(r['path'], source_dir)}: {r['status']}: {r['message']}" for r in bad.iter_rows(named=True)]
        # every line rejected: `goodput run` stops on such a file (check not_all_rejected), so it fails here too
        problems += [f"{_rel(r['path'], source_dir)}: every line rejected ({r['rejects']:,} of {r['lines']:,}): {r['reason']}"
                     for r in sql.query(con, "ingest/source_all_rejected", {"source": source}).iter_rows(named=True)]
        lines, rows, rejects = (int(mine[c].fill_null(0).sum()) for c in ("lines", "rows", "rejects"))
        prefix = str(source_dir.resolve()) + "/"
        reasons = [{**r, "example": r["example"].replace(prefix, "")}
                   for r in sql.query(con, "ingest/check_reject_reasons", {"source": source}).iter_rows(named=True)]
        declared = SOURCES[source]  # its first table holds the rows shown (node_events: those of its events)
        events = declared.tables[0] == "node_events"
        where = {"kind_source": declared.events} if events else {"table": declared.tables[0]}
        unmatched = []
        if slurm_hosts and declared.names_hosts:
            hosts = sql.query(con, "ingest/check_event_hosts" if events else "ingest/check_hosts", where)["host"].to_list()
            unmatched = sorted(set(hosts) - slurm_hosts)[:20]
        sample = (sql.query(con, declared.sample, {"n": sample_rows}) if declared.sample else
                  sql.query(con, "ingest/check_sample_events" if events else "ingest/check_sample_rows", {**where, "n": sample_rows}))
        warned = [f"`goodput run` would be degraded: {rejecting[source]}"] if source in rejecting else []
        # files that are all header (a tickets export on a day without tickets) are no failure: nothing is wrong
        # with them, and `goodput run` reads them; a folder whose lines all went to rejects fails above
        quiet = rows == 0 and rejects == 0 and not problems
        if quiet:
            warned.append("no records in its files (a header or comments only): a quiet period, or an export "
                          "that wrote nothing")
        verdict = "failed" if problems or (rows == 0 and not quiet) else "warning" if warned or unmatched else "ok"
        out.append(FolderCheck(source, verdict, mine.height, lines, rows, rejects,
                               sorted(set(mine["format"].drop_nulls().to_list())), problems, warned, reasons,
                               [{k: (str(v) if v is not None else None) for k, v in r.items()}
                                for r in sample.iter_rows(named=True)], unmatched))
    return out


def _rel(path: str, source_dir: Path) -> str:
    try:
        return str(Path(path).relative_to(source_dir.resolve()))
    except ValueError:
        return str(path)


def as_text(checks: list[FolderCheck]) -> str:
    lines = []
    for c in checks:
        lines.append(f"{c.folder + '/':14} {c.verdict.upper():8} {c.files} file(s), {c.lines:,} lines -> {c.rows:,} rows, "
                     f"{c.rejects:,} rejected" + (f"; format {', '.join(c.formats)}" if c.formats else ""))
        # paths, raw lines and host names come from the source directory: printed escaped, one line each
        lines += [printable(f"    problem: {p}") for p in c.problems]
        lines += [printable(f"    warning: {w}") for w in c.warnings]
        lines += [printable(f"    rejected {r['lines']:,}x: {r['reason']}  e.g. {r['example']}") for r in c.reject_reasons]
        if c.unmatched_hosts:
            lines.append(printable(f"    hosts that ran no Slurm job: {', '.join(c.unmatched_hosts)} ")
                         + "(a naming mismatch? Slurm's node names are what every source must use)")
        for row in c.sample[:2]:
            lines.append(printable("    e.g. " + ", ".join(f"{k}={v}" for k, v in row.items() if v is not None)[:200]))
    return "\n".join(lines)
