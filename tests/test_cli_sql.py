"""`goodput sql` reads the warehouse and nothing else: statements that write
files, read other files, change settings or load code are refused in one line,
and the warehouse is left byte for byte as it was."""
import hashlib

import pytest
from click.testing import CliRunner

from pipelines.cli import main


@pytest.fixture(scope="module")
def db(demo_warehouse):
    return demo_warehouse


def sql(db, query):
    return CliRunner().invoke(main, ["sql", "--db", str(db), "--csv", query])


def digest(path):
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_copy_over_the_warehouse_is_refused_and_the_file_is_untouched(db):
    before, size = digest(db), db.stat().st_size
    result = sql(db, f"COPY (SELECT 1) TO '{db}' (FORMAT csv)")
    assert result.exit_code != 0
    assert "refused: COPY" in result.output and len(result.output.strip().splitlines()) == 1
    assert digest(db) == before and db.stat().st_size == size
    assert sql(db, "SELECT count(*) AS n FROM jobs").output.splitlines() == ["n", "10"]


@pytest.mark.parametrize("statement, refused", [
    ("COPY jobs TO '{out}/jobs.csv' (FORMAT csv)", "COPY"),
    ("EXPORT DATABASE '{out}/export'", "EXPORT"),
    ("SET threads = 1", "SET"),
    ("PRAGMA threads = 1", "PRAGMA"),
    ("ATTACH '{out}/other.duckdb' AS other", "ATTACH"),
    ("INSTALL httpfs", "INSTALL"),
    ("LOAD httpfs", "LOAD"),
    ("CREATE TABLE t AS SELECT 1", "CREATE"),
    ("DELETE FROM jobs", "DELETE"),
    ("SELECT 1; COPY jobs TO '{out}/jobs.csv'", "statements"),
    # EXPLAIN ANALYZE runs what it explains: it passed the statement check (issue 21)
    ("EXPLAIN ANALYZE COPY (SELECT 1) TO '{out}/x.csv'", "EXPLAIN of COPY"),
    ("EXPLAIN ANALYZE DELETE FROM jobs", "EXPLAIN of DELETE"),
    ("/* note */ explain (analyze) INSERT INTO jobs SELECT * FROM jobs", "EXPLAIN of INSERT"),
    ("EXPLAIN ANALYZE SET threads = 1", "EXPLAIN of SET"),
])
def test_statements_that_write_or_change_settings_are_refused(db, tmp_path, statement, refused):
    before = digest(db)
    result = sql(db, statement.format(out=tmp_path))
    assert result.exit_code != 0
    assert refused in result.output and "Traceback" not in result.output
    assert len(result.output.strip().splitlines()) == 1
    assert list(tmp_path.iterdir()) == [] and digest(db) == before


@pytest.mark.parametrize("query", [
    "SELECT * FROM read_csv('/etc/passwd')",
    "SELECT * FROM read_text('/etc/hostname')",
    "SELECT * FROM glob('/etc/*')",
])
def test_queries_cannot_read_or_write_other_files(db, tmp_path, query):
    result = sql(db, query.format(out=tmp_path))
    assert result.exit_code != 0
    assert "reads the warehouse only" in result.output and "root:" not in result.output
    assert len(result.output.strip().splitlines()) == 1
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("query, first_line", [
    ("SELECT cause, count(*) AS n FROM job_failure_causes GROUP BY ALL ORDER BY cause LIMIT 1", "cause,n"),
    ("WITH j AS (SELECT * FROM jobs) SELECT count(*) AS n FROM j", "n"),
    ("FROM job_status_breakdown SELECT count(*) AS n", "n"),
    ("SHOW TABLES", "name"),
    ("DESCRIBE jobs", "column_name,column_type,null,key,default,extra"),
    ("EXPLAIN ANALYZE SELECT count(*) FROM jobs", "explain_key,explain_value"),
])
def test_ordinary_queries_and_views_still_work(db, query, first_line):
    result = sql(db, query)
    assert result.exit_code == 0, result.output
    assert result.output.splitlines()[0] == first_line and len(result.output.splitlines()) > 1


def test_a_missing_warehouse_is_one_line(tmp_path):
    result = sql(tmp_path / "none.duckdb", "SELECT 1")
    assert result.exit_code != 0 and "no warehouse" in result.output and not (tmp_path / "none.duckdb").exists()


def test_a_query_past_its_timeout_is_stopped_in_one_line(db):
    result = CliRunner().invoke(main, ["sql", "--db", str(db), "--timeout", "0.5",
                                       "SELECT count(*) FROM range(1000000000000) a"])
    assert result.exit_code != 0 and "Traceback" not in result.output
    assert "ran longer than 0.5 s and was stopped" in result.output and "--timeout" in result.output
    assert len(result.output.strip().splitlines()) == 1
    assert sql(db, "SELECT count(*) AS n FROM jobs").output.splitlines() == ["n", "10"]  # the next query runs
