"""The DuckDB warehouse: open, create the schema, write one file's rows atomically."""
from __future__ import annotations

import hashlib
import os
from contextlib import contextmanager
from pathlib import Path

import duckdb
import polars as pl

from analysis import snapshot, sources, sql
from analysis.hints import follow_up
from analysis.paths import DEFAULT_DB, DEMO_DB, default_db_path  # noqa: F401 - read as warehouse.DEFAULT_DB, ...


# DuckDB's default memory limit is 80% of the machine: on a shared box the
# nightly run would take it all, and spilling to disk is only a little slower.
DEFAULT_MEMORY_LIMIT = "1536MB"


def _config() -> dict:
    """DuckDB settings: $GOODPUT_MEMORY_LIMIT (e.g. 4GB) bounds DuckDB's own memory (it spills beyond it)."""
    return {"memory_limit": os.environ.get("GOODPUT_MEMORY_LIMIT") or DEFAULT_MEMORY_LIMIT}


def file_in_the_way(path: Path | str) -> Path | None:
    """The nearest existing parent of ``path`` when it is a file, not a folder (``--db notes.txt/w.duckdb``)."""
    for parent in Path(path).parents:
        if parent.exists():
            return None if parent.is_dir() else parent
    return None


def missing_warehouse(path: Path | str) -> str:
    blocker = file_in_the_way(path)
    if blocker is not None:
        return f"no warehouse at {path}: {blocker} is a file, not a folder; give --db a path inside a folder"
    hint = f"run `{follow_up('run', source='DIR', db=str(path))}` first"  # repeats the --db given (issue 34)
    if DEMO_DB.is_file() and Path(path).resolve() != DEMO_DB.resolve():  # after `make demo`, a bare `goodput why`
        hint += f", or read the demo's: --db {DEMO_DB}"
    return f"no warehouse at {path}: {hint}"


def connect(path: Path | str | None = None, read_only: bool = False) -> duckdb.DuckDBPyConnection:
    """A connection to the warehouse. While this process holds it (``held``), a cursor on the held connection:
    DuckDB refuses a second connection to the file with other settings, read-only included. Read-only, when
    another process writes it: its published snapshot (analysis.snapshot)."""
    path = Path(path) if path is not None else default_db_path()
    held_con = _held.get(_key(path))
    if held_con is not None:
        return held_con[0].cursor()
    if read_only:
        if not path.exists():
            raise FileNotFoundError(missing_warehouse(path))
        return snapshot.connect_reader(path, _config())
    path.parent.mkdir(parents=True, exist_ok=True)
    con = duckdb.connect(str(path), config=_config())
    _ensure_schema(con)
    return con


def _ensure_schema(con: duckdb.DuckDBPyConnection) -> None:
    """Create or migrate the schema only when sql/schema/warehouse.sql (or the DDL of a source added to the registry)
    changed since it last ran on this file: its CREATE OR REPLACE statements rewrite the catalog, and a file
    left untouched is how publishing the snapshot knows a no-change run wrote nothing."""
    extra = sources.ddl_files()
    digest = hashlib.sha256("".join([sql.load("schema/warehouse"), *(p.read_text() for p in extra)]).encode()).hexdigest()
    try:
        current = con.execute(sql.load("ops/schema_digest")).fetchall()
    except duckdb.CatalogException:
        current = []
    if current != [(digest,)]:
        sql.run(con, "schema/warehouse")
        for path in extra:
            sql.run_file(con, path)
        sql.run(con, "ops/record_schema_digest", {"digest": digest})


# path -> [connection, depth]: the warehouses this process holds open for writing (``held``)
_held: dict[str, list] = {}


def _key(path: Path | str) -> str:
    return str(Path(path).resolve())


@contextmanager
def held(path: Path | str | None = None):
    """Keep the warehouse open for writing, so locked, for the whole block: a reader cannot take the file
    between two steps of a run and stall the next one (it reads the snapshot instead). Every ``connect``
    in the block shares this connection. Nested blocks share it too; when the outermost ends, the
    connection is closed and the snapshot published."""
    path = Path(path) if path is not None else default_db_path()
    hold(path)
    try:
        yield
    except BaseException:
        release(path, publish=False)  # a crash or Ctrl-C: the next writer publishes
        raise
    release(path)


def hold(path: Path | str) -> None:
    key = _key(path)
    if key in _held:
        _held[key][1] += 1
    else:
        _held[key] = [connect(path), 1]


def release(path: Path | str, publish: bool = True) -> None:
    """End one ``hold``; the last one closes the connection and publishes the snapshot."""
    key = _key(path)
    entry = _held.get(key)
    if entry is None:  # its hold failed (another process had the file)
        return
    entry[1] -= 1
    if entry[1]:
        return
    del _held[key]
    entry[0].close()
    if publish:
        published(path)


def published(path: Path | str) -> snapshot.Published:
    """Publish the snapshot of a warehouse no connection of this process writes any more, and say so."""
    result = snapshot.publish(path)
    if result.done:
        snapshot.log.info("published %s (%.2f GB) in %.1f s (%s)", result.path, result.size / 1e9,
                          result.seconds, result.method)
    elif result.why.startswith("cannot"):
        snapshot.log.warning("readers keep the previous snapshot: %s", result.why)
    else:
        snapshot.log.debug("snapshot not published: %s", result.why)
    return result


def drop_cache(path: Path | str) -> None:
    """Drop the blocks a held connection keeps cached, up to the memory limit, after a step is done with
    them: each step starts with the memory it had when it opened its own connection."""
    entry = _held.get(_key(path))
    if entry is None:
        return
    try:
        sql.run(entry[0], "ops/set_memory_limit", {"limit": "16MB"})  # lowering the limit evicts
    except duckdb.Error:
        pass  # something is still pinned: it stays cached
    finally:
        sql.run(entry[0], "ops/set_memory_limit", {"limit": _config()["memory_limit"]})


def read_scalar(path: Path | str | None, statement: str):
    """One value of sql/<statement>.sql, read through a short read-only connection (the file stays free
    for a writer)."""
    con = connect(path, read_only=True)
    try:
        return sql.scalar(con, statement)
    finally:
        con.close()


def first_data_day(path: Path | str | None = None):
    """The first job-end day in the warehouse, or None when it cannot be read now (no file yet, no jobs,
    a warehouse from before `jobs` existed, or a writer holds the lock): where the daily partitions start."""
    try:
        return read_scalar(path, "ops/first_data_day")
    except (FileNotFoundError, duckdb.Error):
        return None


def write_files(con: duckdb.DuckDBPyConnection, batch: list) -> None:
    """Write a batch of prepared files (analysis.ingest.one_file.Prepared) in one
    transaction: each file's old rows are swapped for its new ones, so a crash
    leaves every file either as it was or as it is now, never half a file."""
    if not batch:
        return
    records = [p.record for p in batch if p.record is not None and "status" in p.record]
    touched = [p.record for p in batch if p.record is not None and "status" not in p.record]
    con.execute("BEGIN TRANSACTION")
    try:
        _delete_rows(con, [r["path"] for r in records])
        _insert(con, [(p.record, p.tables, p.rejects) for p in batch if p.record is not None])
        _upsert_files(con, records)
        for record in touched:
            sql.run(con, "ingest/update_file_mtime", record)
        con.execute("COMMIT")
    except BaseException:
        con.execute("ROLLBACK")
        raise


class FileWriter:
    """One file's rows written as they are parsed, part by part, in one transaction of its own (a file too
    large to hold: DuckDB spills a large transaction to disk): the file's old rows go first, its
    ingested_files row last, so a crash or a parse error part-way (abort) leaves the file as it was."""

    def __init__(self, con: duckdb.DuckDBPyConnection, path: str, source: str):
        self.con, self.record = con, {"path": path, "source": source}
        con.execute("BEGIN TRANSACTION")
        try:
            _delete_rows(con, [path])
        except BaseException:
            con.execute("ROLLBACK")
            raise

    def write(self, tables: dict[str, pl.DataFrame], rejects: pl.DataFrame) -> None:
        _insert(self.con, [(self.record, tables, rejects)])

    def commit(self, record: dict) -> None:
        _upsert_files(self.con, [record])
        self.con.execute("COMMIT")

    def abort(self) -> None:
        try:
            self.con.execute("ROLLBACK")
        except duckdb.Error:  # a failed COMMIT has ended the transaction already
            pass


def _delete_rows(con: duckdb.DuckDBPyConnection, paths: list[str]) -> None:
    if paths:
        con.register("staged_files", pl.DataFrame({"path": paths}, schema={"path": pl.Utf8}))
        if sql.scalar(con, "ingest/staged_files_known"):  # a new file has no old rows: no scan of every table for them
            sql.run(con, "ingest/delete_files_rows")
        con.unregister("staged_files")


def _insert(con: duckdb.DuckDBPyConnection, files: list[tuple[dict, dict[str, pl.DataFrame], pl.DataFrame]]) -> None:
    """``files``: (ingested_files record, table -> rows, rejects) of each file."""
    raw = sources.raw_tables()  # tables that hold rows read from files, each with (file, line_no)
    unknown = {t for _, tables, _ in files for t in tables} - set(raw)
    if unknown:
        raise ValueError(f"parser produced rows for unknown table(s) {sorted(unknown)}")
    for table in raw:
        frames = [_with_file(tables[table], record["path"])
                  for record, tables, _ in files if tables.get(table) is not None and tables[table].height]
        if frames:
            sql.run_on(con, "ingest/insert_raw_rows", "staged_rows", pl.concat(frames, how="diagonal_relaxed"),
                       raw_table=table)
    rejects = [_with_file(r, record["path"]).with_columns(source=pl.lit(record["source"]))
               for record, _, r in files if r.height]
    if rejects:
        sql.run_on(con, "ingest/insert_rejects", "staged_rejects", pl.concat(rejects, how="vertical_relaxed"))


def _upsert_files(con: duckdb.DuckDBPyConnection, records: list[dict]) -> None:
    if records:
        con.register("staged_files", pl.DataFrame(records, infer_schema_length=None))
        sql.run(con, "ingest/upsert_ingested_files")
        con.unregister("staged_files")


def _with_file(frame: pl.DataFrame, path: str) -> pl.DataFrame:
    """A file's rows with its path; rows of a batch of files (analysis.ingest.batch) already name theirs."""
    return frame if "file" in frame.columns else frame.with_columns(file=pl.lit(path))
