"""The sources of node_events, listed once (issue 35): the registry's ``events`` (analysis/sources.py) and the
ones goodput derives itself (DERIVED_EVENTS). The taxonomy's known sources, the node_events asset's inputs and
every source literal in sql/ are derived from or checked against them."""
from __future__ import annotations

import re

from analysis import sql
from analysis.derive import taxonomy
from analysis.sources import DERIVED_EVENTS, SOURCES, event_sources

SOURCE = r"(?:\b\w+\.)?source"
COMPARED = re.compile(rf"{SOURCE}\s*(?:=|<>|!=)\s*'([^']*)'", re.I)  # source = 'slurm'
LISTED = re.compile(rf"{SOURCE}\s+(?:NOT\s+)?IN\s*\(([^)]*)\)", re.I)  # source NOT IN ('slurm', 'ticket')
NAMED = re.compile(r"'([^']*)'\s+AS\s+source\b", re.I)  # 'app' AS source
# other tables' source columns: the record a lifecycle step comes from; where a step time was read
OTHER_SOURCE_COLUMNS = {"models/build_node_lifecycle.sql": {"benchmark", "goodput"},
                        "models/view_node_lifecycle_now.sql": {"goodput"},
                        "derive/stage_step_times_joblogs.sql": {"joblog"}}


def sql_source_literals() -> dict[str, set[str]]:
    """statement -> the source names it compares with, lists or writes."""
    out = {}
    for path in sorted(sql.SQL_DIR.rglob("*.sql")):
        text = re.sub(r"--[^\n]*", "", path.read_text())
        found = set(COMPARED.findall(text)) | set(NAMED.findall(text))
        for group in LISTED.findall(text):
            found |= set(re.findall(r"'([^']*)'", group))
        if found:
            out[path.relative_to(sql.SQL_DIR).as_posix()] = found
    return out


def test_a_source_writes_node_events_exactly_when_it_names_its_events():
    for s in SOURCES.values():
        assert ("node_events" in s.tables) == (s.events is not None), s.folder
    assert not set(DERIVED_EVENTS) & {s.events for s in SOURCES.values()}


def test_the_taxonomy_knows_every_event_source_and_no_other():
    assert set(event_sources()) == {s.events for s in SOURCES.values() if s.events} | set(DERIVED_EVENTS)
    assert {"kernel", "switch", "health", "slurm", "ticket", "app", "telemetry", "network", "straggler"} <= set(
        event_sources())
    assert set(taxonomy.REASON_SOURCES) <= set(event_sources())
    named = set(taxonomy.load().rules["m_source"].explode().drop_nulls())
    assert named and named <= set(event_sources())


def test_sql_names_only_declared_sources():
    """A source literal in sql/ is a node_events source (declared or derived) or a source folder
    (ingested_files.source): a renamed source cannot leave a statement comparing with its old name."""
    known = set(event_sources()) | set(SOURCES)
    found = sql_source_literals()
    assert found, "the patterns find the literals"
    unknown = {name: sorted(names - known - OTHER_SOURCE_COLUMNS.get(name, set())) for name, names in found.items()}
    assert {name: names for name, names in unknown.items() if names} == {}
    assert {"app", "straggler", "network", "telemetry", "ticket", "switch"} <= set().union(*found.values())


def test_the_node_events_asset_reads_every_event_source():
    from assets.derived import node_events

    deps = {k.to_user_string() for k in node_events.dependency_keys}
    assert {s.asset for s in SOURCES.values() if s.events} | set(DERIVED_EVENTS.values()) <= deps
