"""Derived builds: classification and second-order preemptions give what their
plain pairwise definitions (the statements they replaced) give; copies of the
same lines in two files count once; no table depends on the order rows were
written in."""
import shutil
from datetime import datetime, timedelta

import pytest

from analysis import sql, warehouse
from analysis.derive import attribution
from analysis.derive import metrics
from analysis.derive.taxonomy import load
from analysis.ingest.engine import ingest_directory
from analysis.package_files import demo_source
from analysis.simulate.config import preset
from analysis.simulate.run import simulate
from assets.pure_builds import build_all, steps
from tests.test_taxonomy import _events

# The statements replaced for speed, kept as the definition the new ones must meet:
# every rule (its pattern a column) checked against every event, and a counting
# rule's window counted by a correlated subquery. A reason rule (taxonomy/reasons.yaml) reads an operator's text
# as written or with its words pulled apart, and only the first in the list's order that matches counts.
PAIRWISE_CLASSIFY = """
CREATE OR REPLACE TABLE pairwise_classified AS
WITH events AS (SELECT * RENAME (severity AS event_severity) FROM node_events WHERE host IS NOT NULL),
rules AS (SELECT * RENAME (severity AS rule_severity) FROM taxonomy_rules),
every_match AS (
    SELECT e.*, r.* FROM events e, rules r
    WHERE (r.m_kind IS NULL OR list_contains(r.m_kind, e.kind))
      AND (r.m_source IS NULL OR list_contains(r.m_source, e.source))
      AND (r.m_code IS NULL OR list_contains(r.m_code, e.code))
      AND (r.m_severity IS NULL OR list_contains(r.m_severity, lower(e.event_severity)))
      AND (r.m_message IS NULL
           OR CASE WHEN r.reason_order IS NULL THEN regexp_matches(e.message, r.m_message)
                   ELSE operator_text(e.source, e.event_severity)
                        AND (regexp_matches(e.message, r.m_message) OR regexp_matches(reason_words(e.message), r.m_message))
              END)
), matched AS (
    SELECT * FROM every_match
    QUALIFY reason_order IS NULL OR reason_order = min(reason_order) OVER (PARTITION BY file, line_no, host)
), counted AS (
    SELECT m.*, (SELECT count(*) FROM matched o
                 WHERE o.rule_id = m.rule_id AND o.host = m.host
                   AND (m.count_per = 'host' OR o.device IS NOT DISTINCT FROM m.device)
                   AND o.event_time BETWEEN m.event_time - to_seconds(m.count_window_s) AND m.event_time) AS seen
    FROM matched m
), ranked AS (
    SELECT *, row_number() OVER (PARTITION BY file, line_no, host ORDER BY priority DESC, rule_id) AS pick
    FROM counted WHERE count_n IS NULL OR seen >= count_n
)
SELECT event_time, host, source, kind, code, event_severity, message, device, reporter, file, line_no, job_id, peer,
       rule_id AS rule, cause, domain, rule_severity AS severity, transient, priority, distributed
FROM ranked WHERE pick = 1
"""
PAIRWISE_SECOND_ORDER = """
CREATE OR REPLACE TABLE pairwise_second_order AS
WITH restarts AS (
    SELECT k.job_id, k.instance, k.start_time, k.nodes, a.cause AS failure_cause
    FROM jobs k JOIN jobs prev ON prev.job_id = k.job_id AND prev.instance = k.instance - 1
    JOIN job_failure_causes a ON a.job_id = prev.job_id AND a.instance = prev.instance
    WHERE k.instance > 0 AND k.start_time IS NOT NULL AND a.infra_failure
), pairs AS (
    SELECT p.job_id, p.instance, p.end_time AS preempted_at, p.n_gpus, p.elapsed_s,
           r.job_id AS by_job_id, r.instance AS by_instance, r.failure_cause,
           row_number() OVER (PARTITION BY p.job_id, p.instance ORDER BY r.start_time, r.job_id, r.instance) AS pick
    FROM jobs p, restarts r
    WHERE p.state = 'PREEMPTED' AND r.start_time BETWEEN p.end_time AND p.end_time + to_seconds(600)
      AND list_has_any(p.nodes, r.nodes)
)
SELECT job_id, instance, preempted_at, n_gpus, least(elapsed_s, 3600 / 2) * n_gpus / 3600.0 AS lost_gpu_hours,
       by_job_id, by_instance, failure_cause
FROM pairs WHERE pick = 1
"""
# Rules that take every path of the new build: message rules with and without a
# kind, a counting message rule, a rule with neither kind nor message; high
# priorities, so that they win the events they match.
EXTRA_RULES = """
rules:
  - {id: any-switch-line, cause: ethernet_link, severity: info, priority: 100, match: {source: switch}}
  - {id: gpu-word, cause: gpu_driver_firmware, severity: info, priority: 97, match: {message: "(?i)gpu|nvrm"}}
  - {id: xid-pci, cause: gpu_driver_firmware, severity: info, priority: 98,
     match: {kind: xid, message: "PCI:0000:[0-9a-f]{2}"}}
  - {id: ib-words-repeated, cause: infiniband_link, severity: warning, priority: 99,
     match: {source: kernel, message: "(?i)mlx5|link"}, count: {n: 2, window_minutes: 30, per: host}}
"""


def _same_rows(con, a: str, b: str, columns: str = "*") -> None:
    for x, y in ((a, b), (b, a)):
        extra = con.execute(f"SELECT {columns} FROM {x} EXCEPT ALL SELECT {columns} FROM {y}").fetchall()
        assert not extra, f"{len(extra)} rows of {x} not in {y}, e.g. {extra[:2]}"


@pytest.fixture(scope="module")
def simulated(tmp_path_factory):
    root = tmp_path_factory.mktemp("derived")
    # seed 7: ten days of 64 nodes in which every rule family fires and second-order preemptions happen (11);
    # the pairwise classification costs ~0.2 s per 100 events: the size holds it to ~6 s a taxonomy
    simulate(preset("rsc1", nodes=64, days=10, seed=7, telemetry_jobs=0), root / "src")
    return root / "src"


@pytest.mark.parametrize("source", ["demo", "simulated"])
def test_classified_events_and_second_order_match_their_pairwise_definitions(tmp_path, simulated, source):
    rules = tmp_path / "rules.yaml"
    rules.write_text(EXTRA_RULES)
    con = warehouse.connect(tmp_path / "w.duckdb")
    ingest_directory(con, demo_source() if source == "demo" else simulated)
    for taxonomy in (load(), load(rules)):
        build_all(con, taxonomy, metrics.MetricsConfig())
        con.execute(PAIRWISE_CLASSIFY)
        con.execute(PAIRWISE_SECOND_ORDER)
        assert con.execute("SELECT count(*) FROM classified_events").fetchall()[0][0] > 0
        _same_rows(con, "classified_events", "pairwise_classified")
        _same_rows(con, "second_order_preemptions", "pairwise_second_order")
    fired = {r[0] for r in con.execute("SELECT DISTINCT rule FROM classified_events").fetchall()}
    assert {"gpu-word", "any-switch-line", "xid-pci"} <= fired
    if source == "simulated":
        assert "ib-words-repeated" in fired
        assert con.execute("SELECT count(*) FROM second_order_preemptions").fetchall()[0][0] > 0
    con.close()


# The events in each ended job's window, as failure attribution defined them before its node events met
# the job hosts in time buckets: every event of each of the job's hosts compared.
PLAIN_HITS = """
SELECT h.job_id, h.instance, c.file, c.line_no, c.event_time
FROM (SELECT job_id, instance, start_time, end_time, unnest(nodes) AS host FROM jobs
      WHERE end_time IS NOT NULL
        AND state IN ('FAILED', 'NODE_FAIL', 'OUT_OF_MEMORY', 'TIMEOUT', 'CANCELLED', 'REQUEUED')) h
JOIN classified_events c
  ON c.host = h.host
 AND CASE WHEN c.job_id IS NULL
          THEN c.event_time BETWEEN h.end_time - to_seconds($before_s) AND h.end_time + to_seconds($after_s)
          ELSE c.job_id = h.job_id
           AND c.event_time BETWEEN coalesce(h.start_time, h.end_time) - INTERVAL 1 MINUTE
                                AND h.end_time + to_seconds($after_s) END
"""


def test_failure_attribution_sees_the_events_every_window_holds(tmp_path, simulated):
    """Time buckets of an hour (the default 10 + 5 minute window) and wider ones (a 95 + 7 minute window):
    windows that straddle a bucket's edge see the events on both sides."""
    rules = tmp_path / "rules.yaml"
    rules.write_text("windows: {before_minutes: 95, after_minutes: 7}\n")
    con = warehouse.connect(tmp_path / "w.duckdb")
    ingest_directory(con, simulated)
    for taxonomy in (load(), load(rules)):
        build_all(con, taxonomy)
        window = {"before_s": taxonomy.before_s, "after_s": taxonomy.after_s}
        con.execute(f"CREATE OR REPLACE TABLE plain_hits AS {PLAIN_HITS}", window)
        con.execute("CREATE OR REPLACE TABLE hits AS SELECT job_id, instance, file, line_no, event_time "
                    "FROM failure_attribution WHERE file IS NOT NULL")
        assert con.execute("SELECT count(*) FROM hits").fetchall()[0][0] > 100
        _same_rows(con, "hits", "plain_hits")
    con.close()


XID13 = "NVRM: Xid (PCI:0000:18:00): 13, pid=1, name=python, Graphics SM Warp Exception"
EVENT = ("gpu0001", "kernel", "xid", "13", None, XID13, "0000:18:00", "gpu0001")


def test_the_same_lines_in_two_files_are_one_event(tmp_path):
    con = warehouse.connect(tmp_path / "w.duckdb")
    t0 = datetime(2024, 3, 1, 10)
    two = [t0, t0 + timedelta(minutes=3)]
    # two exports of one kernel log: two real XID 13s, four rows
    _events(con, [(t, *EVENT, f, i + 1) for f in ("export-a.log", "export-b.log") for i, t in enumerate(two)])
    assert attribution.classify_events(con, load()) == 2
    got = con.execute("SELECT event_time, rule, file FROM classified_events ORDER BY event_time").fetchall()
    assert [r[1] for r in got] == ["xid-13", "xid-13"]  # not xid13-repeated-same-gpu
    assert {r[2] for r in got} == {"export-a.log"}
    # a third distinct event within 10 minutes: now the rule fires
    _events(con, [(t0 + timedelta(minutes=6), *EVENT, "export-b.log", 3)])
    attribution.classify_events(con, load())
    rules = [r[0] for r in con.execute("SELECT rule FROM classified_events ORDER BY event_time").fetchall()]
    assert rules == ["xid-13", "xid-13", "xid13-repeated-same-gpu"]
    con.close()


def test_a_line_repeated_within_one_file_stays_two_events(tmp_path):
    con = warehouse.connect(tmp_path / "w.duckdb")
    t0 = datetime(2024, 3, 1, 10)
    rows = [(t0, *EVENT, "k.log", 1), (t0, *EVENT, "k.log", 2), (t0 + timedelta(minutes=1), *EVENT, "k.log", 3)]
    _events(con, rows + [(r[0], *r[1:9], "k2.log", r[10]) for r in rows])  # and a copy of the file
    attribution.classify_events(con, load())
    got = con.execute("SELECT file, line_no, rule FROM classified_events ORDER BY line_no").fetchall()
    assert got == [("k.log", 1, "xid-13"), ("k.log", 2, "xid-13"), ("k.log", 3, "xid13-repeated-same-gpu")]
    con.close()


def _with_ties(tmp_path):
    """The demo source, plus two XID 79s in the same second on the failed job's
    node (a tie for the primary cause) and a continuation of alice's run under
    another account (a tie for the run's account)."""
    src = tmp_path / "src"
    shutil.copytree(demo_source(), src)
    (src / "kernel" / "gpu005.log").write_text("".join(
        f"2024-03-01T03:29:50+0000 gpu005 kernel: NVRM: Xid (PCI:0000:{bus}:00): 79, pid=1, name=python,"
        " GPU has fallen off the bus.\n" for bus in ("18", "2a")))
    sacct = (src / "slurm" / "sacct-2024-03-01.txt").read_text().splitlines()
    (src / "slurm" / "sacct-2024-03-02.txt").write_text("\n".join([sacct[0], (
        "1011|1011|llm-pretrain|alice|research|gpu|high|90000|COMPLETED|0:0|None|2024-03-01T20:10:00|"
        "2024-03-01T20:10:00|2024-03-01T20:15:00|2024-03-01T23:15:00|03:00:00|4|"
        "billing=256,cpu=256,gres/gpu=32,mem=2000G,node=4|gpu[001-004]|0|sbatch -N4 --gres=gpu:8 pretrain.sh")]) + "\n")
    return src


def _reverse_every_table(con) -> None:
    """Rewrite each table with its rows in the opposite order: a build whose
    ties are broken by the order rows happen to arrive in gives other answers."""
    for (name,) in con.execute("SELECT table_name FROM duckdb_tables() WHERE NOT temporary").fetchall():
        con.execute(f'CREATE TEMP TABLE reversed AS SELECT * FROM "{name}" ORDER BY rowid DESC')
        con.execute(f'DELETE FROM "{name}"')
        con.execute(f'INSERT INTO "{name}" SELECT * FROM reversed')
        con.execute("DROP TABLE reversed")


@pytest.mark.parametrize("source", ["demo with ties", "simulated"])
def test_derived_tables_do_not_depend_on_row_order(tmp_path, simulated, source):
    src = _with_ties(tmp_path) if source == "demo with ties" else simulated
    taxonomy, cfg = load(), metrics.MetricsConfig()
    first = warehouse.connect(tmp_path / "first.duckdb")
    ingest_directory(first, src)
    build_all(first, taxonomy, cfg)
    first.close()
    con = warehouse.connect(tmp_path / "second.duckdb")
    ingest_directory(con, src)
    for _, step in steps(taxonomy, cfg):
        _reverse_every_table(con)
        step(con)
    con.execute(f"ATTACH '{tmp_path / 'first.duckdb'}' AS first (READ_ONLY)")
    tables = [r[0] for r in con.execute(
        "SELECT table_name FROM duckdb_tables() WHERE database_name = 'first' AND table_name NOT IN"
        " ('ingested_files', 'rejects', 'derived_marks') ORDER BY 1").fetchall()]  # ingest times and run ids differ by design
    assert {"failure_attribution", "job_run_ettr", "node_incidents", "jobs", "job_runs"} <= set(tables)
    for table in tables:
        _same_rows(con, f"first.main.{table}", f"main.{table}")
    if source == "demo with ties":
        assert sql.scalar(con, "derive/attribution_primary_problems") == 0
        primary = con.execute("SELECT device FROM failure_attribution WHERE job_id = '1002' AND is_primary").fetchall()
        assert primary == [("0000:18:00",)]  # the first line of the file, every time
        account = con.execute("SELECT account FROM job_run_ettr WHERE run_id = '1001'").fetchall()
        assert account == [("llm",)]  # the run's first instance
    con.close()
