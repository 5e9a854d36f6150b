"""What each step was built from, so a rerun with nothing new rebuilds nothing.

A step's fingerprint hashes everything its result depends on: its upstream steps' output versions, the settings it
uses, the content of the files those settings name, and goodput's own code. An ingest step's output version comes
from what it stored for each file (``source_version``); a built step's is new at every build, so whatever is
downstream of a rebuilt step is rebuilt too. The records live in the ``asset_inputs`` table, with the step.
"""
from __future__ import annotations

import hashlib
import json
import uuid
from datetime import datetime, timezone
from functools import lru_cache
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path

import duckdb
import polars as pl

from analysis import package_files, sql

CODE_SUFFIXES = {".py", ".sql", ".yaml", ".yml", ".j2", ".html", ".json"}
# libraries whose upgrade can change a result (query engine, models, charts)
LIBRARIES = ("duckdb", "polars", "numpy", "scikit-learn", "torch", "pycox", "altair", "jinja2")


SOURCE = "source:"  # the fingerprint of an ingest record: which source folder it versions


def digest(value) -> str:
    """A stable hash of plain data (dicts in any key order)."""
    return hashlib.sha256(json.dumps(value, sort_keys=True, default=str).encode()).hexdigest()


@lru_cache(maxsize=None)
def code_version() -> str:
    """One hash of goodput's code and shipped data files and of the libraries' versions, computed once per
    process: any change to the code rebuilds everything."""
    h = hashlib.sha256()
    for package in package_files.CODE_PACKAGES:  # where they are installed: a checkout or a wheel hash alike
        root = package_files.path(package)
        for path in sorted(root.rglob("*")):
            if path.suffix in CODE_SUFFIXES and path.is_file() and "__pycache__" not in path.parts:
                name = f"{package}/{path.relative_to(root).as_posix()}"
                h.update(name.encode() + b"\0" + path.read_bytes() + b"\0")
    for name in LIBRARIES:
        try:
            h.update(f"{name}={version(name)}".encode())
        except PackageNotFoundError:
            h.update(f"{name}=none".encode())
    return h.hexdigest()


def file_digest(path: Path | str) -> str | None:
    """The content hash of a file a setting names (None: no such file, which is itself an input)."""
    path = Path(path)
    if not path.is_file():
        return None
    h = hashlib.sha256()
    with path.open("rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def settings_files(config: dict) -> dict[str, str | None]:
    """The files a resource's settings name (a rules file, ETTR overrides, a metrics catalog): their content is an
    input as much as the setting. Folders (the source, --out) are not: what is read from them is versioned apart."""
    return {v: file_digest(v) for v in config.values() if isinstance(v, str) and v and Path(v).is_file()}


def fingerprint(code: str, upstream: dict[str, str | None], settings: dict, files: dict, partition: str | None,
                extra=None) -> str:
    return digest({"code": code, "upstream": upstream, "settings": settings, "files": files, "partition": partition,
                   "extra": extra})


def new_version() -> str:
    """The output version of a step that was just built: unique, so the steps after it see a change."""
    return uuid.uuid4().hex


def source_version(con: duckdb.DuckDBPyConnection, source: str | None) -> str:
    """The version of one source folder's ingested files (None: files in no known folder)."""
    return str(sql.scalar(con, "ops/source_version", {"source": source}))


def stored_all(con: duckdb.DuckDBPyConnection) -> dict[str, dict]:
    """Every step's record: what it was last built from (fingerprint), its output_version, its outcome (the
    metadata of that build, or a check's result) and built_at (UTC)."""
    return {asset: {"fingerprint": fp, "output_version": out, "outcome": json.loads(outcome) if outcome else None,
                    "built_at": built_at}
            for asset, fp, out, outcome, built_at in con.execute(sql.load("ops/asset_inputs_all")).fetchall()}


def record(con: duckdb.DuckDBPyConnection, asset: str, fingerprint_: str | None, output_version: str | None,
           outcome: dict | None = None) -> dict:
    """Record a successful build (or check, or ingest): call only after it succeeded. Returns the record."""
    built_at = datetime.now(timezone.utc).replace(tzinfo=None)
    text = json.dumps(outcome, default=str) if outcome is not None else None
    sql.run(con, "ops/asset_inputs_set", {"asset": asset, "fingerprint": fingerprint_, "output_version": output_version,
                                      "outcome": text, "built_at": built_at})
    return {"fingerprint": fingerprint_, "output_version": output_version,
            "outcome": json.loads(text) if text else None, "built_at": built_at}


def forget_all(con: duckdb.DuckDBPyConnection) -> None:
    """The next run rebuilds every step, each derived table from scratch (not extended from its last build)."""
    sql.run(con, "ops/asset_inputs_clear")
    sql.run(con, "ops/derived_marks_clear")


def forget_steps(con: duckdb.DuckDBPyConnection, assets: list[str]) -> None:
    """The next run rebuilds these steps (something else wrote their tables), and so everything after them."""
    sql.run_staged(con, {"staged_assets": pl.DataFrame({"asset": assets}, schema={"asset": pl.Utf8})},
                   [("ops/asset_inputs_forget", None)])
