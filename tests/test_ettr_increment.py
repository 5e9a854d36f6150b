"""job_run_ettr and run_downtime extended, not rebuilt: a build after jobs, runs, attributions, progress lines or
drains changed computes again only the runs whose inputs changed and those whose windows reach the first day that
changed, and gives the tables a build from scratch gives."""
import pytest

from analysis import sql, warehouse
from analysis.derive import attribution, metrics
from analysis.settings import MetricsConfig
from tests.shared import private_warehouse
from tests.test_job_runs_increment import APPEND

TABLES = ("job_run_ettr", "run_downtime")
# an interrupted instance with a blamed host, in the last quarter of the data but not near its end
INTERRUPTED = """
SELECT r.run_id, j.job_id, j.instance, j.end_time, a.host FROM job_runs r JOIN jobs j USING (job_id, instance)
JOIN failure_attribution a ON a.job_id = j.job_id AND a.instance = j.instance AND a.is_primary AND a.host IS NOT NULL
WHERE r.run_seq < (SELECT max(run_seq) FROM job_runs x WHERE x.run_id = r.run_id) AND j.state NOT IN ('COMPLETED', 'PREEMPTED')
  AND j.end_time > (SELECT min(end_time) + (max(end_time) - min(end_time)) * 0.75 FROM jobs)
  AND j.end_time < (SELECT max(end_time) - INTERVAL 2 DAY FROM jobs)
ORDER BY j.end_time, j.job_id LIMIT 1
"""
# edits a nightly brings, on a few instances each: a longer requeued instance, a failure blamed on another cause,
# a drain of the blamed host an hour after an old interruption, a progress line of an old job
EDITS = ("UPDATE jobs SET end_time = end_time + INTERVAL 1 HOUR WHERE (job_id, instance) IN "
         "(SELECT (job_id, instance) FROM job_runs WHERE run_jobs > 1 AND end_time IS NOT NULL ORDER BY job_id LIMIT 4)",
         "UPDATE failure_attribution SET cause = 'edited' WHERE is_primary AND (job_id, instance) IN "
         "(SELECT (job_id, instance) FROM failure_attribution WHERE is_primary ORDER BY job_id, instance LIMIT 3)",
         "INSERT INTO node_state_periods BY NAME SELECT * REPLACE ('DRAIN' AS state, $end + INTERVAL 1 HOUR AS time_start, "
         "NULL AS time_end, $host AS host, 'test drain' AS reason) FROM node_state_periods LIMIT 1",
         "INSERT INTO job_log_lines BY NAME SELECT * REPLACE ('progress' AS kind, $end - INTERVAL 1 MINUTE AS log_time, "
         "$job_id AS job_id) FROM job_log_lines LIMIT 1")


@pytest.fixture
def built(tmp_path, rsc1_256x20):
    _, shared, _ = rsc1_256x20
    con = warehouse.connect(private_warehouse(shared, tmp_path))
    metrics.build_run_ettr(con, MetricsConfig())  # its mark is this code's: the builds below extend the tables
    yield con
    con.close()


def _scope(con) -> int:
    sql.run_steps(con, [("metrics/stage_job_run_ettr_inputs", None), ("metrics/stage_job_run_ettr_scope", None)])
    return con.execute("SELECT count(*) FROM job_run_ettr_scope").fetchall()[0][0]


def _differ_from_scratch(con, extended: dict) -> dict:
    sql.run(con, "metrics/forget_job_run_ettr_marks")  # the next build starts from scratch
    metrics.build_run_ettr(con, MetricsConfig())
    differ = {}
    for table, frame in extended.items():
        con.register("extended", frame)
        differ[table] = con.execute(
            f"SELECT (SELECT count(*) FROM (SELECT * FROM extended EXCEPT ALL SELECT * FROM {table})), "
            f"(SELECT count(*) FROM (SELECT * FROM {table} EXCEPT ALL SELECT * FROM extended))").fetchall()[0]
        con.unregister("extended")
    return differ


def _as_built(con) -> dict:
    return {t: con.sql(f"SELECT * FROM {t}").pl() for t in TABLES}


def test_an_unchanged_build_computes_nothing_again(built):
    assert _scope(built) == 0
    before = _as_built(built)
    metrics.build_run_ettr(built, MetricsConfig())
    assert _differ_from_scratch(built, before) == {t: (0, 0) for t in TABLES}


def test_edits_give_the_tables_of_a_build_from_scratch(built):
    total = sql.count(built, "job_run_ettr")
    run_id, job_id, _, end, host = built.execute(INTERRUPTED).fetchall()[0]
    before = built.execute("SELECT diagnosis_isolation_s FROM run_downtime WHERE run_id = ?", [run_id]).fetchall()
    for edit in EDITS:
        built.execute(edit, {k: v for k, v in {"end": end, "host": host, "job_id": job_id}.items() if f"${k}" in edit})
    touched = _scope(built)
    assert 0 < touched < total / 2, (touched, total)  # the edited runs and the last days' runs, not every run
    metrics.build_run_ettr(built, MetricsConfig())
    extended = _as_built(built)
    after = built.execute("SELECT diagnosis_isolation_s FROM run_downtime WHERE run_id = ?", [run_id]).fetchall()
    assert after != before  # the drain an hour after the old interruption is counted
    assert extended["job_run_ettr"]["failure_causes"].str.contains("edited").any()
    assert _differ_from_scratch(built, extended) == {t: (0, 0) for t in TABLES}


# a nightly's new job (test_job_runs_increment's APPEND), chained by job_runs' own (extending) build
def test_a_new_job_computes_again_only_its_run(built):
    attribution.build_job_runs(built)
    built.execute(APPEND)
    attribution.build_job_runs(built)
    assert 0 < _scope(built) < 10
    metrics.build_run_ettr(built, MetricsConfig())
    extended = _as_built(built)
    assert _differ_from_scratch(built, extended) == {t: (0, 0) for t in TABLES}


def test_other_settings_compute_every_run(built):
    marks = "SELECT step FROM derived_marks WHERE starts_with(step, 'job_run_ettr ')"
    first = built.execute(marks).fetchall()
    other = MetricsConfig(dt_s=MetricsConfig().dt_s * 2)
    metrics.build_run_ettr(built, other)
    assert built.execute(marks).fetchall() not in ([], first)  # one mark, of the new settings
    doubled = built.execute("SELECT DISTINCT dt_s FROM job_run_ettr").fetchall()
    assert doubled == [(other.dt_s,)]
    metrics.build_run_ettr(built, MetricsConfig())
    assert built.execute(marks).fetchall() == first
