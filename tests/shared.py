"""Simulated clusters and pipeline runs built once per test run and shared by the modules that read them
(conftest.py's session fixtures), with private copies for the tests that change them."""
from __future__ import annotations

import os
import pickle
import shutil
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Callable

import pytest
from filelock import FileLock


def _shared_root(tmp_path_factory) -> Path:
    # under xdist each worker's basetemp is <run>/popen-gwN: their parent is this run's, shared by all workers
    base = tmp_path_factory.getbasetemp()
    return (base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base) / "shared"


def shared_build(tmp_path_factory, key: str, build: Callable[[Path], Any]) -> tuple[Path, Any]:
    """Build once per test run into <run>/shared/<key>, whichever worker asks first (the others wait on the
    lock, then reuse it); returns the folder and what ``build`` returned (pickled). Readers must not write
    into the folder: copy what they change (see ``private_warehouse``)."""
    root = _shared_root(tmp_path_factory) / key
    root.parent.mkdir(parents=True, exist_ok=True)
    done = root / ".built.pickle"
    with FileLock(str(root) + ".lock"):
        if not done.exists():
            shutil.rmtree(root, ignore_errors=True)  # a build that failed part way
            root.mkdir()
            value = build(root)
            done.with_suffix(".tmp").write_bytes(pickle.dumps(value))
            done.with_suffix(".tmp").rename(done)
    return root, pickle.loads(done.read_bytes())


def private_warehouse(shared: Path, dest: Path, db: str = "w.duckdb") -> Path:
    """A copy of a shared build's warehouse in ``dest``, with its source linked beside it (read-only by
    convention: tests that change the source copy it)."""
    dest.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(shared / db, dest / db)
    if (shared / "src").exists() and not (dest / "src").exists():
        (dest / "src").symlink_to(shared / "src", target_is_directory=True)
    return dest / db


def simulated_warehouse(cfg, root: Path, metrics: bool = True) -> dict:
    """Simulate ``cfg`` into root/src, ingest it into root/w.duckdb and build every derived table."""
    from analysis import warehouse
    from analysis.derive import metrics as m
    from analysis.ingest.engine import ingest_directory
    from analysis.simulate.run import simulate
    from analysis.derive.taxonomy import load
    from assets.pure_builds import build_all

    summary = simulate(cfg, root / "src")
    con = warehouse.connect(root / "w.duckdb")
    try:
        ingest_directory(con, root / "src")
        built = build_all(con, load(), m.MetricsConfig() if metrics else None)
        con.execute("CHECKPOINT")
    finally:
        con.close()
    return {"summary": summary, "built": {k: v for k, v in built.items() if k in ("failure_rates", "goodput")}}

@contextmanager
def quick_telemetry(epochs: int = 2):
    """`goodput run` / run_pipeline with few telemetry training epochs, for tests that do not judge the
    detectors (test_telemetry_detect does, with its own settings): the LSTM-VAEs' 30 epochs are most of
    a run on a simulated cluster."""
    import assets.resources
    from assets.resources import TelemetrySettings

    with pytest.MonkeyPatch.context() as mp:  # what build_resources() builds
        # the tests' epochs win over what a caller asks (the demo's own)
        mp.setattr(assets.resources, "TelemetrySettings", lambda **kw: TelemetrySettings(**{**kw, "epochs": epochs}))
        yield


def record_tables_written(instance, db: Path, steps: set[str]) -> dict[str, set[str]]:
    """Hook ``instance``: each of ``steps`` (asset keys) that a run of it materializes records the warehouse tables
    and views it changed (created, replaced, rows added, removed or changed), in the dict returned. A table it
    created empty is not counted: that is schema (machine_alerts creates detector_evaluation's), not rows."""
    written, before, handle = {}, {}, instance.handle_new_event

    def handle_new_event(event, *args, **kwargs):
        step = getattr(event, "dagster_event", None)
        kind, key = (step.event_type_value, step.step_key) if step is not None else (None, None)
        if key in steps and kind == "STEP_START":
            before[key] = _table_states(db)
        elif key in before and kind == "STEP_SUCCESS":
            old, now = before.pop(key), _table_states(db)
            created_empty = {t for t, (kind, _, *rows) in now.items() if t not in old and kind == "table" and rows[0] == 0}
            written[key] = {t for t in old.keys() | now.keys() if old.get(t) != now.get(t)} - created_empty
        return handle(event, *args, **kwargs)

    instance.handle_new_event = handle_new_event
    return written


def _table_states(db: Path) -> dict[str, tuple]:
    """Each table's and view's catalog entry (a new one when replaced) and its rows' count and hash sum."""
    from analysis import warehouse

    con = warehouse.connect(db)  # during the run: a cursor on the connection the run holds
    try:
        states = {name: ("view", oid, text) for name, oid, text in con.execute(
            "SELECT view_name, view_oid, sql FROM duckdb_views() WHERE NOT internal AND NOT temporary").fetchall()}
        tables = con.execute("SELECT table_name, table_oid FROM duckdb_tables() WHERE NOT temporary").fetchall()
        for name, oid in tables:
            states[name] = ("table", oid, *con.execute(f'SELECT count(*), sum(hash(t)) FROM "{name}" t').fetchall()[0])
        return states
    finally:
        con.close()
