"""classified_events and failure_attribution extended, not rebuilt: a build after node events or jobs changed
classifies again only the events from the first day that changed and judges again only the instances whose window
reaches it, and gives the tables a build from scratch gives."""
import pytest

from analysis import sql, warehouse
from analysis.derive import attribution
from analysis.derive.taxonomy import load
from tests.shared import private_warehouse

TABLES = ("classified_events", "failure_attribution")
# a nightly's changes on the last two days: kernel lines gone, the lines of another export (the same events in new
# files: copies, and new events a day later), and a job that failed on the last day
LAST_DAYS = ("DELETE FROM node_events WHERE source = 'kernel' AND event_time >= (SELECT max(event_time) - INTERVAL 1 DAY "
             "FROM node_events) AND hash(file, line_no) % 3 = 0",
             "INSERT INTO node_events BY NAME SELECT event_time + INTERVAL 1 DAY AS event_time, file || '.late' AS file, "
             "* EXCLUDE (event_time, file) FROM node_events WHERE event_time >= (SELECT max(event_time) - INTERVAL 2 DAY "
             "FROM node_events) ORDER BY file, line_no LIMIT 2000",
             "UPDATE jobs SET state = 'FAILED' WHERE (job_id, instance) IN (SELECT (job_id, instance) FROM jobs WHERE "
             "state = 'COMPLETED' ORDER BY end_time DESC, job_id LIMIT 5)")
# a job re-reported weeks later in a new state
OLD_JOB = ("UPDATE jobs SET state = 'NODE_FAIL' WHERE (job_id, instance) IN (SELECT (job_id, instance) FROM jobs "
           "WHERE state = 'COMPLETED' ORDER BY end_time, job_id LIMIT 3)")


@pytest.fixture
def built(tmp_path, rsc1_256x20):
    _, shared, _ = rsc1_256x20
    con = warehouse.connect(private_warehouse(shared, tmp_path))
    _build(con)  # their marks are this code's: the builds below extend the tables
    yield con
    con.close()


def _build(con):
    taxonomy = load()
    attribution.classify_events(con, taxonomy)
    attribution.attribute_failures(con, taxonomy)


def _as_built(con) -> dict:
    return {t: con.sql(f"SELECT * FROM {t}").pl() for t in TABLES}


def _differ_from_scratch(con, extended: dict) -> dict:
    for forget in ("derive/forget_classify_marks", "derive/forget_attribution_marks"):
        sql.run(con, forget)
    _build(con)
    differ = {}
    for table, frame in extended.items():
        con.register("extended", frame)
        differ[table] = con.execute(
            f"SELECT (SELECT count(*) FROM (SELECT * FROM extended EXCEPT ALL SELECT * FROM {table})), "
            f"(SELECT count(*) FROM (SELECT * FROM {table} EXCEPT ALL SELECT * FROM extended)), "
            f"(SELECT count(*) FROM {table})").fetchall()[0]
        con.unregister("extended")
    return differ


def _since(con):
    """The first day classify_events would classify again."""
    sql.run_steps(con, [("derive/stage_classified_event_days", None)])
    since = con.execute(sql.load("derive/classify_since")).fetchall()[0][0]
    con.execute("DROP TABLE event_days_now")
    return since


@pytest.mark.parametrize("edits", [LAST_DAYS, (*LAST_DAYS, OLD_JOB)], ids=["last_days", "and_an_old_job"])
def test_changes_give_the_tables_of_a_build_from_scratch(built, edits):
    last = built.execute("SELECT max(event_time) FROM node_events").fetchall()[0][0]
    for edit in edits:
        built.execute(edit)
    since = _since(built)
    assert since is not None and (last - since).days <= 2  # only the last days are classified again
    _build(built)
    differ = _differ_from_scratch(built, _as_built(built))
    assert all(a == b == 0 and n for a, b, n in differ.values()), differ


def test_nothing_changed_nothing_rebuilt(built):
    before = _as_built(built)
    assert _since(built) is None
    _build(built)
    assert _differ_from_scratch(built, before) == {t: (0, 0, before[t].height) for t in TABLES}


def test_a_line_on_both_sides_of_the_first_changed_day_classifies_everything(built):
    """A line's events keep one winner per host: a line with events before and after the day that changed is
    classified with all of them, from scratch."""
    built.execute("INSERT INTO node_events BY NAME SELECT (SELECT max(event_time) FROM node_events) + INTERVAL 1 HOUR "
                  "AS event_time, * EXCLUDE (event_time) FROM node_events WHERE source = 'kernel' "
                  "ORDER BY event_time, file, line_no LIMIT 1")  # the first kernel line again, after the last event
    since = _since(built)
    assert sql.scalar(built, "derive/classify_straddles", {"since": since})
    _build(built)
    assert all(a == b == 0 for a, b, _ in _differ_from_scratch(built, _as_built(built)).values())
