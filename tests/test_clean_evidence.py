"""A long first history with no tickets folder (issue 21): a node whose critical
incident was followed by clean evidence is back in service, not drained; one
with no clean evidence since still is. The rule: sql/models/build_clean_evidence.sql."""
from __future__ import annotations

import re
import shutil
from datetime import datetime, timedelta

import duckdb
import polars as pl
import pytest

from analysis import warehouse
from analysis.derive.attribution import build_node_incidents
from analysis.derive.taxonomy import load
from analysis.ingest.engine import ingest_directory
from analysis.nodes import exports
from analysis.nodes.lemon_scoring import default_as_of
from analysis.simulate.config import preset
from analysis.simulate.run import simulate
from assets.pure_builds import build_all

AS_OF = datetime(2024, 6, 1)
E = datetime(2024, 5, 25, 12)  # every hand-made critical incident's last event
H = timedelta(hours=1)


def _jobs(host: str, *spans, state: str = "COMPLETED") -> list[dict]:
    return [{"job_id": f"{host}-{state}-{i}", "state": state, "start_time": a, "end_time": b, "nodes": [host, "other"]}
            for i, (a, b) in enumerate(spans)]


def _check(host: str, t: datetime, severity: str = "ok") -> dict:
    return {"host": host, "event_time": t, "source": "health", "kind": "health_check", "code": "gpu_count",
            "severity": severity, "message": "8 GPUs present"}


def _boot(host: str, t: datetime) -> dict:
    return {"host": host, "event_time": t, "source": "kernel", "kind": "other", "code": None, "severity": None,
            "message": "Linux version 6.5.0-1018-nvidia (buildd@lcy02-amd64-046) (x86_64-linux-gnu-gcc-12 "
                       "(Ubuntu 12.3.0-1ubuntu1~22.04) 12.3.0) #18-Ubuntu SMP"}


def _three_long(host: str, start: datetime) -> list[dict]:
    return _jobs(host, *[(start + 4 * i * H, start + (4 * i + 3) * H) for i in range(3)])


HOSTS = ["a_jobs", "a_short", "a_across", "b_reboot", "b_stale", "b_resume", "down", "down_stale", "future",
         "failed_check", "k8s_recovered", "k8s_info_xid"]


def _node_health(host: str, t: datetime, kind: str, severity: str) -> dict:
    """An NVSentinel event: a recovery (isHealthy, kind health_ok) or an XID 13, which NVSentinel calls info."""
    return {"host": host, "event_time": t, "source": "node_health", "kind": kind,
            "code": "GpuXidError" if kind == "health_ok" else "13", "severity": severity, "message": "m"}


@pytest.fixture
def hand_made():
    """One critical incident per host, each followed by different evidence."""
    incidents = [{"incident_id": f"{h}#1", "host": h, "first_event": E - 10 * H / 60, "last_event": E,
                  "severity": "critical", "transient": False, "cause": "gpu_unavailable"} for h in HOSTS]
    incidents += [{"incident_id": "warning#1", "host": "warning", "first_event": E, "last_event": E,
                   "severity": "warning", "transient": False, "cause": "pcie"},
                  {"incident_id": "old#1", "host": "old", "first_event": AS_OF - timedelta(days=20),
                   "last_event": AS_OF - timedelta(days=20), "severity": "critical", "transient": False,
                   "cause": "gpu_memory"}]
    events = [_check(h, E + 24 * H) for h in ("a_jobs", "a_short", "a_across", "down", "down_stale", "warning")]
    events += [_boot("b_reboot", E + H), _check("b_reboot", E + 2 * H),  # rebooted, then passed
               _check("b_stale", E + H), _boot("b_stale", E + 3 * H),  # passed, then rebooted: nothing since
               _check("future", AS_OF + H), _check("failed_check", E + 24 * H, "critical"),
               _node_health("k8s_recovered", E + 24 * H, "health_ok", "ok"),
               _node_health("k8s_info_xid", E + 24 * H, "xid", "info")]
    jobs = (_three_long("a_jobs", E + 2 * H) + _three_long("down", E + 2 * H) + _three_long("down_stale", E + 2 * H)
            + _three_long("failed_check", E + 2 * H) + _three_long("warning", E + 2 * H)
            + _three_long("k8s_recovered", E + 2 * H) + _three_long("k8s_info_xid", E + 2 * H)
            + _jobs("a_short", (E + 2 * H, E + 5 * H), (E + 6 * H, E + 9 * H), (E + 10 * H, E + 11 * H))
            + _jobs("a_short", (E + 12 * H, E + 17 * H), state="FAILED")
            + _jobs("a_across", *[(E - H, E + 5 * H)] * 3)  # running when it happened
            + _jobs("b_resume", (E + 5 * H, E + 7.5 * H))
            + _jobs("future", (AS_OF - 2 * H, AS_OF + 2 * H), (AS_OF - 3 * H, AS_OF + H), (AS_OF - 4 * H, AS_OF + 3 * H)))
    periods = [{"host": "b_resume", "time_start": E + H / 12, "time_end": E + 4 * H, "state": "DRAIN", "reason": "x"},
               {"host": "down", "time_start": E + 48 * H, "time_end": None, "state": "DRAIN", "reason": "bad"},
               # never closed in the record, but Slurm started jobs on the node after it began
               {"host": "down_stale", "time_start": E + H, "time_end": None, "state": "DOWN", "reason": "x"},
               {"host": "future", "time_start": AS_OF - H, "time_end": AS_OF + H, "state": "DRAIN", "reason": "x"}]
    con = duckdb.connect()
    for name, rows in (("incidents_as_of", incidents), ("node_events", events), ("jobs", jobs),
                       ("node_states", periods)):  # the deduplicated view the rule reads; no files here
        frame = pl.DataFrame(rows, infer_schema_length=None)
        con.register("staged", frame)
        con.execute(f"CREATE TABLE {name} AS SELECT * FROM staged")
        con.unregister("staged")
    yield con
    con.close()


def test_the_rule_on_hand_made_evidence(hand_made):
    out = exports.clean_evidence(hand_made, AS_OF)
    assert sorted(out["host"]) == sorted(HOSTS)  # warnings and incidents before the window are not judged
    got = dict(out.select("host", "returned_to_service").iter_rows())
    assert {h for h, ok in got.items() if ok} == {"a_jobs", "b_reboot", "b_resume", "down_stale", "k8s_recovered"}, got
    row = {r["host"]: r for r in out.iter_rows(named=True)}
    assert (row["a_jobs"]["checks_passed"], row["a_jobs"]["jobs_completed"], row["a_jobs"]["restarted_at"]) == (1, 3, None)
    # two of three long enough, a failed one never counts
    assert row["a_short"]["jobs_completed"] == 2 and row["a_short"]["checks_passed"] == 1
    assert row["a_across"]["jobs_completed"] == 0  # the jobs were running when the event happened
    assert (row["b_reboot"]["restarted_how"], row["b_reboot"]["restarted_at"]) == ("rebooted", E + H)
    assert row["b_stale"]["restarted_at"] == E + 3 * H and row["b_stale"]["checks_passed"] == 1
    assert (row["b_resume"]["restarted_how"], row["b_resume"]["restarted_at"]) == ("back from DRAIN", E + 4 * H)
    assert (row["down"]["down_state"], row["down"]["down_since"]) == ("DRAIN", E + 48 * H)
    assert row["down_stale"]["down_state"] is None
    # what comes at or after as_of is not known yet: a check, jobs still running, a drain ending later
    assert (row["future"]["checks_passed"], row["future"]["jobs_completed"], row["future"]["down_state"]) == (0, 0, "DRAIN")
    assert row["failed_check"]["checks_passed"] == 0  # a failing check is not a passing one
    # a health agent's recovery passes; its other events do not, whatever their severity
    assert row["k8s_recovered"]["checks_passed"] == 1 and row["k8s_info_xid"]["checks_passed"] == 0


def test_the_rule_follows_its_settings(hand_made):
    loose = exports.LadderConfig(clean_jobs=2, clean_job_hours=1.0)
    got = dict(exports.clean_evidence(hand_made, AS_OF, loose).select("host", "returned_to_service").iter_rows())
    assert got["a_short"] and not got["a_across"]
    strict = exports.LadderConfig(clean_checks=2)
    got = dict(exports.clean_evidence(hand_made, AS_OF, strict).select("host", "returned_to_service").iter_rows())
    assert not got["a_jobs"] and not got["b_reboot"] and got["b_resume"]  # b_resume: back, then a job completed


PASSING = ("ok", "pass", "passed", "info", "success")


def _oracle(con: duckdb.DuckDBPyConnection, host: str, t: datetime, as_of: datetime, cfg: exports.LadderConfig) -> bool:
    """The rule again, from the raw tables, one node at a time (fine for a test)."""
    window = as_of - timedelta(days=cfg.expiry_days)
    ev = con.sql("SELECT event_time, source, kind, severity, message FROM node_events WHERE host = $h "
                 "AND event_time > $t AND event_time < $a", params={"h": host, "t": t, "a": as_of}).pl()
    checks = ev.filter(((pl.col("source") == "health") & pl.col("severity").str.to_lowercase().is_in(PASSING))
                       | ((pl.col("source") == "node_health") & (pl.col("kind") == "health_ok")))["event_time"]
    boots = ev.filter((pl.col("source") == "kernel") & pl.col("message").str.starts_with("Linux version "))["event_time"]
    jobs = con.sql("SELECT state, start_time, end_time FROM jobs WHERE list_contains(nodes, $h) AND start_time >= $w "
                   "AND start_time < $a", params={"h": host, "w": window, "a": as_of}).pl()
    good = jobs.filter((pl.col("state") == "COMPLETED") & (pl.col("start_time") > t) & (pl.col("end_time") < as_of)
                       & (pl.col("end_time") - pl.col("start_time") >= timedelta(hours=cfg.clean_job_hours)))["start_time"]
    periods = con.sql("SELECT time_start, time_end FROM node_state_periods WHERE host = $h",
                      params={"h": host}).pl()
    backs = periods.filter((pl.col("time_end") > t) & (pl.col("time_end") < as_of))["time_end"]
    open_ = periods.filter((pl.col("time_start") < as_of) & (pl.col("time_end").is_null() | (pl.col("time_end") >= as_of)))
    down = any(not (jobs["start_time"] > s).any() for s in open_["time_start"])
    restart = max([*boots, *backs], default=None)
    after = restart is not None and ((checks > restart).sum() >= cfg.clean_checks or (good > restart).any())
    return not down and ((len(checks) >= cfg.clean_checks and len(good) >= cfg.clean_jobs) or after)


@pytest.fixture(scope="module")
def no_tickets(tmp_path_factory):
    """32 nodes x 45 days, the tickets folder removed: a first run over weeks of logs with no repair records."""
    root = tmp_path_factory.mktemp("history")
    # seed 8: both outcomes occur, and a node still drained with nothing since its event (chosen for that,
    # after the simulator's queue and preemption changes moved which faults each seed draws)
    simulate(preset("small", nodes=32, days=45, seed=8, telemetry_jobs=0), root / "src")
    shutil.rmtree(root / "src" / "tickets")
    con = warehouse.connect(root / "w.duckdb")
    ingest_directory(con, root / "src")
    build_all(con, load())
    yield con, default_as_of(con)
    con.close()


def test_without_tickets_clean_evidence_returns_a_node_to_service(no_tickets):
    con, as_of = no_tickets
    assert con.sql("SELECT count(*) FROM tickets").fetchall()[0][0] == 0
    cfg = exports.LadderConfig()
    actions = exports.build_node_actions(con, as_of, cfg)
    # every node with a confirmed critical incident no ticket repaired: drained by it before the rule
    critical = actions.filter(pl.col("critical_event").is_not_null())
    back = critical.filter("returned_to_service")
    held = critical.filter(~pl.col("returned_to_service"))
    assert back.height and held.height, critical
    for r in critical.iter_rows(named=True):
        assert _oracle(con, r["host"], r["critical_event"], as_of, cfg) == r["returned_to_service"], r
    # no lemon scores or validation runs here: a critical incident is the only way to drain_now, but for the nodes
    # the lifecycle escalated (their third drain for one part in 90 days, not back in service since)
    escalated = set(actions.filter(pl.col("reason").str.starts_with("escalated: "))["host"])
    assert set(actions.filter(pl.col("action") == "drain_now")["host"]) == set(held["host"]) | escalated
    assert all(r.endswith(": no clean evidence, drain") for r in held["reason"])
    assert all("returned to service" in r and "since then" in r for r in back["reason"])
    assert (back["checks_passed"] >= 1).all() and ((back["jobs_completed"] >= 3) | back["restarted_at"].is_not_null()).all()
    # an unrepaired node: drained at the end of the data, nothing since its critical event
    still_down = set(con.sql("SELECT host FROM node_state_periods WHERE time_end IS NULL").pl()["host"])
    unrepaired = held.filter(pl.col("host").is_in(still_down) & (pl.col("jobs_completed") == 0))
    assert unrepaired.height and all(re.search(r", (DRAIN|DOWN)\S* since ", r) for r in unrepaired["reason"])
    # the rule is used only in the ladder's window: an older incident never drains a node
    assert (critical["critical_event"] >= as_of - timedelta(days=cfg.expiry_days)).all()


def test_tickets_still_decide_first(no_tickets):
    """An open ticket holds a node whatever the evidence; a closed one repairs it without any."""
    con, as_of = no_tickets
    before = exports.build_node_actions(con, as_of).filter(pl.col("critical_event").is_not_null())
    back = before.filter("returned_to_service").row(0, named=True)
    # (an escalated node stays drained whatever its tickets: the lifecycle sends it for RMA)
    held = before.filter(~pl.col("returned_to_service") & ~pl.col("reason").str.starts_with("escalated: ")).row(0, named=True)
    first = dict(con.sql("SELECT host, max(first_event) FROM node_incidents WHERE host IN ($a, $b) AND last_event IN "
                         "($ta, $tb) GROUP BY host", params={"a": back["host"], "b": held["host"],
                                                              "ta": back["critical_event"],
                                                              "tb": held["critical_event"]}).fetchall())
    con.execute("INSERT INTO tickets VALUES ('T-open', $h, $o, NULL, 'GPU', NULL, 'test', 1), "
                "('T-closed', $h2, $o2, $c2, 'GPU', 'replaced GPU', 'test', 2)",
                {"h": back["host"], "o": first[back["host"]] + timedelta(minutes=30), "h2": held["host"],
                 "o2": first[held["host"]] + timedelta(minutes=30), "c2": as_of - timedelta(minutes=1)})
    try:
        build_node_incidents(con)
        after = {r["host"]: r for r in exports.build_node_actions(con, as_of).iter_rows(named=True)}
        assert after[back["host"]]["action"] == "drain_now"
        assert after[back["host"]]["reason"].endswith("ticket T-open still open: drain")
        assert held["host"] not in after or after[held["host"]]["action"] != "drain_now"
    finally:
        con.execute("DELETE FROM tickets WHERE file = 'test'")
        build_node_incidents(con)
