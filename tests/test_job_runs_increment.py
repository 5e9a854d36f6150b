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
    attribution.build_job_runs(con)  # its mark is this code's: the builds below extend the table
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
    assert 0 < touched < total, (touched, total)  # the ends of the edited jobs' groups, not the whole table
    attribution.build_job_runs(built)
    extended = built.sql("SELECT * FROM job_runs").pl()
    assert extended.filter(extended["job_name"] == "renamed").height  # the renamed jobs moved group
    sql.run(built, "derive/forget_job_runs_marks")  # the next build starts from scratch
    attribution.build_job_runs(built)
    assert _differ(built, extended) == (0, 0) and extended.height == sql.count(built, "job_runs")


# a nightly's new job: the next of the busiest group (user, job name, size), a day after its last job started
APPEND = """
INSERT INTO jobs BY NAME
SELECT * REPLACE ('new-' || job_id AS job_id, submit_time + INTERVAL 1 DAY AS submit_time,
                  start_time + INTERVAL 1 DAY AS start_time, end_time + INTERVAL 1 DAY AS end_time)
FROM jobs WHERE job_id = (SELECT arg_max(job_id, start_time) FROM job_runs WHERE (user_name, job_name, n_gpus) =
                          (SELECT (user_name, job_name, n_gpus) FROM job_runs GROUP BY ALL ORDER BY count(*) DESC LIMIT 1))
"""


def test_a_new_job_chains_again_only_the_end_of_its_group(built):
    biggest = built.execute("SELECT count(DISTINCT job_id) FROM job_runs GROUP BY user_name, job_name, n_gpus "
                            "ORDER BY 1 DESC LIMIT 1").fetchall()[0][0]
    built.execute(APPEND)
    touched = _scope(built)
    assert 0 < touched < biggest, (touched, biggest)  # its run's jobs and itself, not its whole group
    attribution.build_job_runs(built)
    extended = built.sql("SELECT * FROM job_runs").pl()
    sql.run(built, "derive/forget_job_runs_marks")
    attribution.build_job_runs(built)
    assert _differ(built, extended) == (0, 0) and extended.filter(extended["job_id"].str.starts_with("new-")).height


def test_other_settings_rebuild_from_scratch(built):
    marks = "SELECT step FROM derived_marks WHERE starts_with(step, 'job_runs ')"
    first = built.execute(marks).fetchall()
    attribution.build_job_runs(built, gap_s=60)
    assert built.execute(marks).fetchall() not in ([], first)  # one mark, of the new settings
    attribution.build_job_runs(built)
    assert built.execute(marks).fetchall() == first
