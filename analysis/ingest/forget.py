"""`goodput forget PATH...`: take files out of the warehouse.

A source file deleted from disk keeps its rows until it is forgotten. Forgetting
removes, in one transaction, every raw row, every reject and the
ingested_files record of the files. Derived tables (jobs, classified events,
attribution, metrics) are not touched here: the next `goodput run` rebuilds
them from the raw tables, so until then they still count the forgotten files.
"""
from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

import duckdb
import polars as pl

from analysis import fingerprints, sql
from analysis.display import utf8_path


class UnknownPaths(ValueError):
    """Some arguments name no ingested file; nothing was removed."""

    def __init__(self, paths: list[str]):
        self.paths = paths
        super().__init__(f"not in the warehouse: {', '.join(paths)}; nothing was removed "
                         "(`goodput sql \"SELECT path FROM ingested_files\"` lists the files it holds)")


@dataclass
class Forgotten:
    files: pl.DataFrame  # path, source, status, rows, rejects: what was (or would be) removed
    copies: list[str] = field(default_factory=list)  # recorded copies of these files the next run reads
    still_on_disk: list[str] = field(default_factory=list)  # forgotten, but the next run reads them again

    @property
    def rows(self) -> int:
        return int(self.files["rows"].fill_null(0).sum())

    @property
    def rejects(self) -> int:
        return int(self.files["rejects"].fill_null(0).sum())


def _candidates(arg: str) -> set[str]:
    """The argument as given, absolute, and with symlinks resolved (ingest stores the resolved path).
    A trailing slash is dropped so a folder matches as a prefix."""
    trimmed = arg.rstrip("/") or "/"
    return {utf8_path(c) for c in (trimmed, os.path.abspath(trimmed), str(Path(trimmed).resolve()))}


def match(con: duckdb.DuckDBPyConnection, args: list[str]) -> list[str]:
    """The ingested paths the arguments name: a file by its path, or every file
    below a folder. Raises UnknownPaths when an argument names nothing."""
    staged = pl.DataFrame([(a, c) for a in args for c in _candidates(a)], schema=["arg", "candidate"], orient="row")
    con.register("staged_args", staged)
    try:
        exact = sql.query(con, "ingest/forget_match_paths")
        rest = staged.filter(~pl.col("arg").is_in(exact["arg"].implode()))
        folders = pl.DataFrame(schema={"arg": pl.Utf8, "path": pl.Utf8})
        if rest.height:
            con.unregister("staged_args")
            con.register("staged_args", rest)
            folders = sql.query(con, "ingest/forget_match_folders")
    finally:
        con.unregister("staged_args")
    found = pl.concat([exact, folders], how="vertical_relaxed")
    unknown = [a for a in dict.fromkeys(args) if a not in set(found["arg"].to_list())]
    if unknown:
        raise UnknownPaths(unknown)
    return sorted(set(found["path"].to_list()))


def forget(con: duckdb.DuckDBPyConnection, args: list[str], dry_run: bool = False) -> Forgotten:
    """Remove the files the arguments name (see ``match``) in one transaction;
    with ``dry_run``, only say what would be removed."""
    paths = match(con, args)
    con.register("staged_files", pl.DataFrame({"path": paths}, schema={"path": pl.Utf8}))
    try:
        files = sql.query(con, "ingest/forget_files_summary")
        copies = sql.query(con, "ingest/forget_copies")["path"].to_list()
        if not dry_run:
            # the rows and rejects go as they do before a re-ingest; then the file records; and the next run
            # versions every source again, so what was built from these files is rebuilt
            sql.run_steps(con, [("ingest/delete_files_rows", None), ("ingest/forget_files", None),
                                ("ops/asset_inputs_forget_sources", {"prefix": fingerprints.SOURCE})])
    finally:
        con.unregister("staged_files")
    return Forgotten(files, copies, [p for p in paths if Path(p).exists()])
