"""Is this file new? One rule (issue 35): the new-file sensor reports a file exactly when an ingest run would
read it (analysis.ingest.engine.files_to_read: size, mtime_ns, read options, racy-clean), and a file the
engine skips as unchanged is not reported."""
from __future__ import annotations

import os
import shutil
import time

import pytest

from analysis import warehouse
from analysis.ingest import batch
from analysis.ingest.engine import ingest_directory
from analysis.package_files import demo_source
from pipelines.schedules import new_files


@pytest.fixture
def read_by_a_run(monkeypatch):
    """The files an ingest run hands on to be read (the ones it does not skip as unchanged), by key."""
    groups = batch.groups

    def run(db, src) -> set[str]:
        handed: set[str] = set()

        def recording(files):
            handed.update(key for _, _, key, _ in files)
            return groups(files)

        monkeypatch.setattr(batch, "groups", recording)
        con = warehouse.connect(db)
        try:
            ingest_directory(con, src)
        finally:
            con.close()
        return handed

    return run


def test_the_sensor_reports_what_the_engine_would_read(tmp_path, read_by_a_run):
    src, db = tmp_path / "src", tmp_path / "w.duckdb"
    shutil.copytree(demo_source(), src)
    old = time.time() - 3600
    for path in src.rglob("*"):
        os.utime(path, (old, old))
    before = set(new_files(src, db))  # no warehouse yet: every file of a source is new
    assert before and before == read_by_a_run(db, src)
    assert new_files(src, db) == {} and read_by_a_run(db, src) == set()  # all read: nothing new for either

    kernel = sorted((src / "kernel").iterdir())
    with kernel[0].open("a") as f:  # changed content, new size
        f.write("[  999.000000] NVRM: Xid (PCI:0000:18:00): 79, GPU has fallen off the bus.\n")
    os.utime(kernel[0], (old + 60, old + 60))
    os.utime(kernel[1], (old + 60, old + 60))  # touched: same size, new mtime (read again, found the same)
    (src / "health" / "health-2024-03-02.jsonl").write_text((src / "health" / "health-2024-03-01.jsonl").read_text())
    os.utime(src / "health" / "health-2024-03-02.jsonl", (old, old))  # a new file (a copy: a duplicate when read)
    os.utime(kernel[2], (time.time(), time.time()))  # modified just now: racy-clean, read again
    reported = set(new_files(src, db))
    assert reported == read_by_a_run(db, src)
    assert {os.path.basename(k) for k in reported} == {kernel[0].name, kernel[1].name, kernel[2].name,
                                                       "health-2024-03-02.jsonl"}
