"""Build only what changed. A built step (``@unless_unchanged``) is skipped when its fingerprint (its upstream
steps' output versions, its settings and the files they name, the code, the day: analysis/fingerprints.py) equals
the one stored at its last successful build, and the files that build wrote are still there: Dagster shows it
materialized with ``unchanged`` and the metadata of that build. A check (``@replayed_while_unchanged``) on a step
that was not rebuilt replays its stored outcome, failures included. An ingest step always runs
(``@versioned_ingest``) and records its source's version.

A skipped step opens no warehouse connection (each costs a file open and the schema script): the records are read
once per run. Put ``@unless_unchanged`` above ``@withheld_on_error``: a withheld or crashed step keeps its output
version (it kept its contents) but loses its fingerprint, so the next run builds it again whatever its inputs."""
from __future__ import annotations

import functools
from pathlib import Path

from dagster import (AssetCheckExecutionContext, AssetCheckResult, AssetCheckSeverity, AssetExecutionContext,
                     AssetKey, ConfigurableResource, MaterializeResult, MetadataValue, PathMetadataValue)

from analysis import fingerprints
from assets.degrade import WITHHELD
from assets.resources import Warehouse

UNCHANGED = "unchanged"  # metadata of a step whose output did not change this run
UNCHANGED_FILES = "unchanged_files"  # metadata of an ingest: files found as stored, not read again
BUILT_AT = "built_at"  # ... and when the output it holds was built (UTC)


def unless_unchanged(fn=None, *, upstream: str = "ancestors", files=None, extra=None):
    """Decorate a built asset's body. ``upstream``: "ancestors" (every step it reads from, directly or not) or
    "all" (every other step: the report reads them all). ``files(kwargs)``: more files the step reads (their
    content is an input). ``extra(con, partition, kwargs)``: anything else its output depends on."""
    if fn is None:
        return functools.partial(unless_unchanged, upstream=upstream, files=files, extra=extra)

    @functools.wraps(fn)  # Dagster reads the wrapped signature for its resources
    def run_step(*args, **kwargs):
        context = AssetExecutionContext.get()
        key, warehouse = context.asset_key.to_user_string(), kwargs["warehouse"]
        partition = context.partition_key if context.has_partition_key else None
        records = _records(context.run.run_id, warehouse)
        steps = _upstream(context, key, upstream)
        settings, named = _settings(kwargs)
        named.update({str(p): fingerprints.file_digest(p) for p in (files(kwargs) if files else [])})
        more = None
        if extra:
            with warehouse.connect() as con:
                more = extra(con, partition, kwargs)
        fp = fingerprints.fingerprint(fingerprints.code_version(), {s: _version(records, s) for s in steps},
                                      settings, named, partition, more)
        last = records.get(key)
        if last and last["fingerprint"] == fp and _files_exist(last["outcome"]):
            context.log.info(f"{key}: inputs unchanged since {last['built_at']:%Y-%m-%d %H:%M} UTC, not rebuilt")
            return MaterializeResult(metadata={**_decode(last["outcome"]), UNCHANGED: True,
                                               BUILT_AT: last["built_at"].isoformat(timespec="seconds")})
        try:
            result = fn(*args, **kwargs)
        except BaseException:
            _record(records, warehouse, key, None, _version(records, key), last and last["outcome"], quiet=True)
            raise
        if result is not None and WITHHELD in (result.metadata or {}):  # kept its contents: built again next run
            _record(records, warehouse, key, None, _version(records, key), last and last["outcome"])
        else:
            _record(records, warehouse, key, fp, fingerprints.new_version(), _encode(result))
        return result

    return run_step


def replayed_while_unchanged(fn):
    """Decorate an asset check: while its asset's output and the check's settings are those it last judged,
    its stored outcome is replayed (a failure stays a failure) rather than run again."""

    @functools.wraps(fn)
    def run_check(*args, **kwargs):
        context = AssetCheckExecutionContext.get()
        spec, warehouse = context.check_specs[0], kwargs["warehouse"]
        asset = spec.asset_key.to_user_string()
        key = f"{asset}:{spec.name}"
        partition = context.partition_key if context.has_partition_key else None
        records = _records(context.run.run_id, warehouse)
        settings, named = _settings(kwargs)
        fp = fingerprints.fingerprint(fingerprints.code_version(), {asset: _version(records, asset)}, settings,
                                      named, partition)
        last = records.get(key)
        if last and last["fingerprint"] == fp and last["outcome"]:
            o = last["outcome"]
            return AssetCheckResult(passed=o["passed"], severity=AssetCheckSeverity(o["severity"]),
                                    description=o["description"],
                                    metadata={**_decode(o["metadata"]), UNCHANGED: True,
                                              "checked_at": last["built_at"].isoformat(timespec="seconds")})
        result = fn(*args, **kwargs)
        outcome = {"passed": result.passed, "severity": result.severity.value, "description": result.description,
                   "metadata": _encode(result)}
        _record(records, warehouse, key, fp, None, outcome)
        return result

    return run_check


def versioned_ingest(source: str | None):
    """Decorate an ingest asset's body: record the version of what its source's files hold after it ran (even
    when it raised: what it committed is there). Its metadata says ``unchanged`` when that is the last one;
    when every file was found as stored, it is, with no query (`goodput forget` drops the ingest records)."""

    def decorate(fn):
        @functools.wraps(fn)
        def run_step(*args, **kwargs):
            context = AssetExecutionContext.get()
            key, warehouse = context.asset_key.to_user_string(), kwargs["warehouse"]
            records = _records(context.run.run_id, warehouse)
            result = None
            try:
                result = fn(*args, **kwargs)
            finally:
                meta = (result.metadata or {}) if result is not None else {}
                same = key in records and UNCHANGED_FILES in meta and meta["files"] == meta[UNCHANGED_FILES]
                if not same:
                    with warehouse.connect() as con:
                        version = fingerprints.source_version(con, source)
                        same = _version(records, key) == version
                        records[key] = fingerprints.record(con, key, fingerprints.SOURCE + (source or ""), version)
            return result._replace(metadata={**meta, UNCHANGED: same})

        return run_step

    return decorate


# The records of one run (Dagster run id, warehouse): read once, kept up to date by this run's steps.
_run_records: dict[tuple[str, str], dict[str, dict]] = {}


def _records(run_id: str, warehouse: Warehouse) -> dict[str, dict]:
    key = (run_id, warehouse.db_path)
    if key not in _run_records:
        _run_records.clear()  # one run at a time in a process: the previous one's are done with
        with warehouse.connect() as con:
            _run_records[key] = fingerprints.stored_all(con)
    return _run_records[key]


def _record(records: dict, warehouse: Warehouse, key: str, fp, version, outcome, quiet: bool = False) -> None:
    try:
        with warehouse.connect() as con:
            records[key] = fingerprints.record(con, key, fp, version, outcome)
    except Exception:
        records.pop(key, None)
        if not quiet:  # (quiet: the step's own error is the one to see)
            raise


def _version(records: dict, key: str) -> str | None:
    return (records.get(key) or {}).get("output_version")


def _settings(kwargs) -> tuple[dict, dict]:
    """The settings of the resources a step uses, and the content of the files they name. The warehouse is not a
    setting: the records live in it."""
    settings, files = {}, {}
    for name, value in kwargs.items():
        if isinstance(value, ConfigurableResource) and not isinstance(value, Warehouse):
            config = value.model_dump()
            settings[name] = config
            files.update(fingerprints.settings_files(config))
    return settings, files


def _upstream(context: AssetExecutionContext, key: str, how: str) -> tuple[str, ...]:
    """The steps whose output versions go into ``key``'s fingerprint, from the graph of the run's job: the whole
    graph of the definitions it was built from, whatever part of it this run materializes (the code location's
    jobs hold every asset; `goodput run` passes every asset and selects the ones it runs: pipelines/runner.py)."""
    return _steps(context.job_def.asset_layer.asset_graph, key, how)


def _steps(graph, key: str, how: str) -> tuple[str, ...]:
    keys = graph.get_all_asset_keys() if how == "all" else graph.get_ancestor_asset_keys(AssetKey.from_user_string(key))
    return tuple(sorted(k.to_user_string() for k in keys if k.to_user_string() != key))


def _encode(result) -> dict:
    """Metadata as JSON: paths tagged, so a replay can tell a file that is gone."""
    out = {}
    for name, value in ((result.metadata or {}) if result is not None else {}).items():
        if isinstance(value, PathMetadataValue):
            out[name] = {"path": value.value}
        else:
            out[name] = value.value if isinstance(value, MetadataValue) else value
    return out


def _decode(metadata: dict | None) -> dict:
    return {name: MetadataValue.path(v["path"]) if _is_path(v) else v for name, v in (metadata or {}).items()}


def _is_path(value) -> bool:
    return isinstance(value, dict) and set(value) == {"path"}


def _files_exist(metadata: dict | None) -> bool:
    """The files the last build wrote (its path metadata) are still there: a deleted report is written again."""
    return all(Path(v["path"]).exists() for v in (metadata or {}).values() if _is_path(v))
