"""job_runs extended, not rebuilt: a build after jobs changed chains again only the (user, job name, size) groups
the changes touch, and gives the table a build over every job gives."""
import duckdb
import pytest

from analysis import sql, warehouse
from analysis.derive import attribution
from tests.shared import private_warehouse

# edits a nightly brings, on a few jobs each: a requeue's state, jobs gone (forgotten dumps), a renamed job (it
# leaves its group for another), a failure newly explained
EDITS = ("UPDATE jobs SET state = 'FAILED' WHERE job_id IN (SELECT job_id FROM jobs WHERE state = 'COMPLETED' "
         "ORDER BY job_id LIMIT 7)",
         "DELETE FROM jobs WHERE job_id IN (SELECT job_id FROM jobs ORDER BY hash(job_id) LIMIT 5)",
         "UPDATE jobs SET job_name = 'renamed' WHERE job_id IN (SELECT job_id FROM jobs WHERE instance > 0 "
         "ORDER BY job_id LIMIT 3)",
         "UPDATE jobs SET end_time = end_time + INTERVAL 1 HOUR WHERE job_id IN "
         "(SELECT job_id FROM job_runs WHERE run_jobs > 1 ORDER BY job_id LIMIT 4)")


@pytest.fixture
def built(tmp_path, rsc1_256x20):
    _, shared, _ = rsc1_256x20
    con = warehouse.connect(private_warehouse(shared, tmp_path))
    attribution.build_job_runs(con)  # marked by this code (the shared build may come from a cache of older code)
    yield con
    con.close()


def _scope(con) -> int:
    sql.run_steps(con, [("derive/stage_job_run_inputs", None), ("derive/stage_job_run_scope", None)])
    return con.execute("SELECT count(*) FROM job_run_scope").fetchall()[0][0]


def _differ(con: duckdb.DuckDBPyConnection, extended) -> tuple[int, int]:
    con.register("extended", extended)
    try:
        return con.execute("SELECT (SELECT count(*) FROM (SELECT * FROM extended EXCEPT ALL SELECT * FROM job_runs)), "
                           "(SELECT count(*) FROM (SELECT * FROM job_runs EXCEPT ALL SELECT * FROM extended))"
                           ).fetchall()[0]
    finally:
        con.unregister("extended")


def test_an_unchanged_build_chains_nothing_again(built):
    assert _scope(built) == 0
    before = built.sql("SELECT * FROM job_runs").pl()
    attribution.build_job_runs(built)
    assert _differ(built, before) == (0, 0)


def test_edited_jobs_give_the_table_of_a_build_from_scratch(built):
    total = built.execute("SELECT count(DISTINCT job_id) FROM job_runs").fetchall()[0][0]
    for edit in EDITS:
        built.execute(edit)
    touched = _scope(built)
    assert 0 < touched < total / 2, (touched, total)  # the groups of the edited jobs, not the whole table
    attribution.build_job_runs(built)
    extended = built.sql("SELECT * FROM job_runs").pl()
    assert extended.filter(extended["job_name"] == "renamed").height  # the renamed jobs moved group
    sql.run(built, "derive/forget_job_runs_marks")  # the next build starts from scratch
    attribution.build_job_runs(built)
    assert _differ(built, extended) == (0, 0) and extended.height == sql.count(built, "job_runs")


def test_other_settings_rebuild_from_scratch(built):
    marks = "SELECT step FROM derived_marks WHERE starts_with(step, 'job_runs ')"
    first = built.execute(marks).fetchall()
    attribution.build_job_runs(built, gap_s=60)
    assert built.execute(marks).fetchall() not in ([], first)  # one mark, of the new settings
    attribution.build_job_runs(built)
    assert built.execute(marks).fetchall() == first
