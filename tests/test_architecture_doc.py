"""docs/architecture.md says what the code does: its asset table is the one generated from the reviewed graph
snapshot (tests/asset_table.py), and its checklist for adding a source names every step a source needs."""
from __future__ import annotations

import json

from tests import asset_table


def test_the_asset_table_is_the_snapshot():
    assert asset_table.documented(asset_table.DOC.read_text()) == asset_table.table(), (
        "docs/architecture.md's asset table differs from tests/fixtures/asset_graph.json: "
        "run `python -m tests.asset_table` and commit it")


def test_the_table_notes_files_only_for_assets_that_write_no_table():
    graph = json.loads(asset_table.SNAPSHOT.read_text())
    assert all(name in graph and not graph[name]["tables"] for name in asset_table.FILES)


def test_the_checklist_names_every_step():
    text = asset_table.DOC.read_text()
    checklist = text[text.index("## Adding a source"):text.index("## Tests")]
    for step in ("analysis/ingest/parsers/", "analysis/sources.py", "sql/schema/warehouse.sql", "Source.ddl",
                 "`missing`", "`events`", "`volume`", "sql/ops/daily_volume_", "event_sources",
                 "python -m tests.test_asset_graph", "tests/fixtures/asset_graph.json", "python -m tests.asset_table",
                 "tests/fixtures/<source>/"):
        assert step in checklist, step
