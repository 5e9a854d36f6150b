"""sql/ by stage (sql/__init__.py): every statement file is named by a caller, every name a caller gives is a file,
each persistent table is declared in one file, and the whole-table reads take only goodput's table names."""
import re

import pytest

from analysis import sql, warehouse
from tests.conftest import REPO

CALLERS = ("analysis", "assets", "pipelines", "reports", "bench", "tests")
STAGED = "|".join(sql.STAGES)
LITERAL = re.compile(rf"""["']((?:{STAGED})/[a-z0-9_]+)["']""")  # "derive/build_job_runs"
PREFIX = re.compile(rf"""f["']((?:{STAGED})/[a-z0-9_]*)\{{""")  # f"ingest/insert_{table}": each file it can name
BARE = re.compile(r"""["']([a-z0-9_]+)["']""")  # the top-level statements' names
# a persistent table's declaration (TEMP tables are a script's own)
DECLARE = re.compile(r"^\s*CREATE\s+(OR\s+REPLACE\s+)?TABLE\s+(IF\s+NOT\s+EXISTS\s+)?(\w+)", re.I | re.M)


def _statements() -> set[str]:
    return {p.relative_to(sql.SQL_DIR).with_suffix("").as_posix() for p in sql.SQL_DIR.rglob("*.sql")}


def _callers() -> str:
    own = REPO / "tests" / "test_sql_layout.py"
    return "\n".join(p.read_text() for d in CALLERS for p in sorted((REPO / d).rglob("*.py")) if p != own)


def test_every_statement_has_a_caller_and_every_name_a_file():
    files, text = _statements(), _callers()
    named, prefixes = set(LITERAL.findall(text)), set(PREFIX.findall(text))
    top = {f for f in files if "/" not in f}
    called = named | (set(BARE.findall(text)) & top) | {f for f in files for p in prefixes if f.startswith(p)}
    assert sorted(files - called) == [], "statements no caller names (dead files)"
    assert sorted(named - files) == [], "names no statement file has"
    assert all(any(f.startswith(p) for f in files) for p in prefixes), prefixes
    assert {f.split("/")[0] for f in files - top} == set(sql.STAGES)


def test_each_persistent_table_is_declared_once():
    declared: dict[str, list[str]] = {}
    for path in sorted(sql.SQL_DIR.rglob("*.sql")):
        name = path.relative_to(sql.SQL_DIR).as_posix()
        for replace, if_not_exists, table in DECLARE.findall(path.read_text()):
            declared.setdefault(table.lower(), []).append(name)
            # a build replaces its table whole; a table kept from run to run is declared in schema/
            assert bool(if_not_exists) == name.startswith("schema/") and not (replace and if_not_exists), (name, table)
            if name.startswith("schema/") and name != "schema/warehouse.sql":
                assert name == f"schema/{table}.sql", (name, table)
        assert name.startswith("schema/") or not re.search(r"^\s*ALTER\s+TABLE", path.read_text(), re.I | re.M), name
    assert {t: f for t, f in declared.items() if len(f) > 1} == {}


def test_statement_names_are_stage_and_file(tmp_path):
    assert sql.load("derive/build_job_runs") == (REPO / "sql" / "derive" / "build_job_runs.sql").read_text()
    for bad in ("../pyproject", "nowhere/build_job_runs", "derive/../schema/jobs", "derive/build_job_runs.sql", ""):
        with pytest.raises(ValueError):
            sql.load(bad)


def test_whole_table_reads_take_only_goodputs_tables(tmp_path):
    con = warehouse.connect(tmp_path / "w.duckdb")
    assert sql.count(con, "node_events") == 0 and sql.table_exists(con, "ingested_files")
    assert not sql.table_exists(con, "jobs")  # created by the jobs step, when it first runs
    sql.run(con, "schema/jobs")
    assert sql.table_exists(con, "jobs") and sql.count(con, "jobs") == 0
    for bad in ('jobs; DROP TABLE jobs', 'jobs"', "duckdb_tables()", "not_a_table"):
        with pytest.raises(ValueError):
            sql.count(con, bad)
        with pytest.raises(ValueError):
            sql.table_exists(con, bad)
    assert sql.table_exists(con, "jobs")


def test_a_warehouse_of_an_older_schema_opens_and_keeps_its_rows(tmp_path):
    """A schema change reruns schema/warehouse.sql on an existing file (its digest differs): idempotent."""
    path = tmp_path / "w.duckdb"
    con = warehouse.connect(path)
    con.execute("INSERT INTO rejects VALUES ('slurm', 'f', 1, 'x', 'bad')")
    con.execute("UPDATE goodput_schema SET digest = 'an older schema'")
    con.execute("ALTER TABLE ingested_files DROP COLUMN verified_at")  # from before that column
    con.close()
    con = warehouse.connect(path)
    try:
        assert con.execute("SELECT count(*) FROM rejects").fetchall() == [(1,)]
        assert "verified_at" in {c[0] for c in con.execute("DESCRIBE ingested_files").fetchall()}
        assert con.execute("SELECT digest FROM goodput_schema").fetchall() != [("an older schema",)]
        assert not sql.table_exists(con, "node_risk")  # a step's own table: created when the step first runs
    finally:
        con.close()
