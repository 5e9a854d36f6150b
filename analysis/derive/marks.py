"""What a derived table was last built from, so that a nightly extends it instead of rebuilding it.

A build records how many files of its sources it read and the newest ingested_at among them. The next
build may extend the table with the files ingested since only when every file the last build read is still
there, unchanged (the count of files ingested up to that time is the same: a re-read file has a newer
ingested_at, a forgotten one is gone); otherwise it rebuilds from scratch."""
from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

import duckdb

from analysis import sql


@dataclass
class Mark:
    files: int
    through: datetime | None  # newest ingested_at of those files
    data_through: datetime | None = None  # newest reading covered, for builds that say


def extendable(con: duckdb.DuckDBPyConnection, step: str, sources: list[str], table: str) -> Mark | None:
    """The last build's mark when ``table`` may be extended from it, else None (rebuild)."""
    got = sql.query(con, "ops/derived_mark_get", {"step": step})
    if not got.height or not sql.table_exists(con, table):
        return None
    last = Mark(*got.row(0))
    still = sql.query(con, "ops/source_files_through", {"sources": sources, "through": last.through})["files"][0]
    return last if still == last.files else None


def now(con: duckdb.DuckDBPyConnection, sources: list[str]) -> Mark:
    files, through = sql.query(con, "ops/source_files_through", {"sources": sources, "through": None}).row(0)
    return Mark(files, through)


def record(step: str, mark: Mark) -> tuple[str, dict]:
    """The run_steps entry that records ``mark`` for ``step`` (in the build's own transaction)."""
    return ("ops/derived_mark_set", {"step": step, "files": mark.files, "through": mark.through,
                                 "data_through": mark.data_through})

