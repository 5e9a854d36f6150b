"""The node lifecycle from files alone (analysis/nodes/lifecycle.py): `goodput run` over Slurm's node events, repair
tickets and health checks walks gpu001 through drained -> in repair -> awaiting validation -> validated -> resumed,
escalates gpu002 at its third drain for one component (and the ladder drains it now for an RMA), and offers drain.sh
the validated node goodput drained (gpu003), never the one a human drained (gpu004)."""
from __future__ import annotations

import json
from datetime import datetime

import duckdb
import pytest
from click.testing import CliRunner

from pipelines.cli import main

GOODPUT_DRAIN = "goodput: drain_now gpu_memory score=1.00"
EVENTS = [  # NodeName|TimeStart|TimeEnd|State|Reason|User (sacctmgr show event)
    ("gpu001", "2024-03-02T10:00:00", "2024-03-05T12:00:00", "DRAIN", GOODPUT_DRAIN),
    ("gpu002", "2024-03-02T10:00:00", "2024-03-03T10:00:00", "DRAIN", GOODPUT_DRAIN),
    ("gpu002", "2024-03-06T10:00:00", "2024-03-07T10:00:00", "DRAIN", GOODPUT_DRAIN),
    ("gpu002", "2024-03-10T10:00:00", "Unknown", "DRAIN", GOODPUT_DRAIN),
    ("gpu003", "2024-03-08T08:00:00", "Unknown", "DRAIN", GOODPUT_DRAIN),
    ("gpu004", "2024-03-08T08:00:00", "Unknown", "DRAIN", "bad fan, replaced by admin"),
]
TICKETS = [  # ticket_id,host,opened,closed,component,resolution
    ("T-1", "gpu001", "2024-03-02T11:00:00", "2024-03-04T09:00:00", "GPU", "replaced GPU 2"),
    ("T-3", "gpu003", "2024-03-08T09:00:00", "2024-03-09T10:00:00", "GPU", "reseated GPU 5"),
    ("T-4", "gpu004", "2024-03-08T09:00:00", "2024-03-09T10:00:00", "fan", "replaced fan 3"),
]
CHECKS = [("gpu001", "2024-03-04T10:00:00Z"), ("gpu003", "2024-03-09T12:00:00Z"), ("gpu004", "2024-03-09T12:00:00Z")]


def _source(root):
    (root / "slurm").mkdir(parents=True)
    header = ("JobID|JobIDRaw|JobName|User|Account|Partition|QOS|Priority|State|ExitCode|Reason|Submit|Eligible|"
              "Start|End|Elapsed|NNodes|AllocTRES|NodeList|Restarts|SubmitLine")
    jobs = [f"{100 + d}|{100 + d}|train|alice|llm|gpu|high|1000|COMPLETED|0:0|None|2024-03-{d:02d}T00:00:00|"
            f"2024-03-{d:02d}T00:00:00|2024-03-{d:02d}T00:00:00|2024-03-{d:02d}T06:00:00|06:00:00|4|"
            f"billing=256,cpu=256,gres/gpu=32,mem=2000G,node=4|gpu[005-008]|0|sbatch -N4 train.sh" for d in range(1, 13)]
    (root / "slurm" / "sacct.txt").write_text("\n".join([header, *jobs]) + "\n")
    (root / "slurm_events").mkdir()
    (root / "slurm_events" / "events.txt").write_text(
        "NodeName|TimeStart|TimeEnd|State|Reason|User\n" + "".join(f"{'|'.join(e)}|root(0)\n" for e in EVENTS))
    (root / "tickets").mkdir()
    (root / "tickets" / "tickets.csv").write_text(
        "ticket_id,host,opened,closed,component,resolution\n" + "".join(",".join(t) + "\n" for t in TICKETS))
    (root / "health").mkdir()
    (root / "health" / "checks.jsonl").write_text("".join(
        json.dumps({"time": t, "host": h, "check": "gpu_ecc", "severity": "ok", "message": "no uncorrectable ECC errors"})
        + "\n" for h, t in CHECKS))


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    root = tmp_path_factory.mktemp("lifecycle")
    _source(root / "src")
    db = root / "w.duckdb"
    result = CliRunner().invoke(main, ["run", "--source", str(root / "src"), "--db", str(db), "--out", str(root / "out"),
                                       "-q"])
    return db, result


def _steps(db, host: str) -> list[tuple]:
    con = duckdb.connect(str(db), read_only=True)
    try:
        return con.execute("SELECT step_time, state, evidence FROM node_lifecycle WHERE host = ? AND source <> 'goodput' "
                           "OR host = ? AND state = 'escalated' ORDER BY step", [host, host]).fetchall()
    finally:
        con.close()


def test_drain_ticket_validation_resume(run):
    db, result = run
    steps = _steps(db, "gpu001")
    assert [s for _, s, _ in steps] == ["drained", "in_repair", "awaiting_validation", "validated", "resumed"], steps
    assert [t for t, _, _ in steps] == [datetime(2024, 3, 2, 10), datetime(2024, 3, 2, 11), datetime(2024, 3, 4, 9),
                                        datetime(2024, 3, 4, 10), datetime(2024, 3, 5, 12)]
    said = {s: e for _, s, e in steps}
    assert said["drained"] == "drained by goodput: drain_now gpu_memory score=1.00 (GPU)"
    assert said["awaiting_validation"] == "ticket T-1 closed: replaced GPU 2"
    assert said["resumed"] == "back in service after health check gpu_ecc passed"
    why = CliRunner().invoke(main, ["why", "--db", str(db), "gpu001"]).output
    lifecycle = why[why.index("lifecycle"):]
    for state in ("drained", "in_repair", "awaiting_validation", "validated", "resumed"):
        assert f" {state} " in lifecycle, why
    assert "ticket T-1 closed: replaced GPU 2" in lifecycle


def test_three_drains_of_one_component_escalate(run):
    db, _ = run
    steps = _steps(db, "gpu002")
    assert [s for _, s, _ in steps] == ["drained", "resumed", "drained", "resumed", "drained", "escalated"], steps
    at, _, evidence = steps[-1]
    assert at == datetime(2024, 3, 10, 10)
    assert evidence == ("3 repair attempts for GPU in 90 days (2024-03-02, 2024-03-06, 2024-03-10): "
                        "send for RMA / hardware inspection")
    con = duckdb.connect(str(db), read_only=True)
    try:
        action, reason, ticket, component = con.execute(
            "SELECT action, reason, suggest_ticket, suggested_component FROM node_actions WHERE host = 'gpu002'").fetchall()[0]
    finally:
        con.close()
    assert (action, ticket, component) == ("drain_now", True, "GPU") and reason.startswith("escalated: 3 repair attempts")
    why = CliRunner().invoke(main, ["why", "--db", str(db), "gpu002"]).output
    assert "escalated" in why[why.index("lifecycle"):] and "drain_now (action score 1.00): escalated" in why


def now_and_resume(db, hosts: tuple[str, ...]):
    """The lifecycle state of ``hosts`` now, and the resume candidates (tests/test_lifecycle_kubernetes.py too)."""
    from analysis.nodes import lifecycle

    con = duckdb.connect(str(db), read_only=True)
    try:
        states = dict(con.execute("SELECT host, state FROM node_lifecycle_now WHERE list_contains(?, host)",
                                  [list(hosts)]).fetchall())
        return states, lifecycle.resume_candidates(con)
    finally:
        con.close()


def test_only_the_validated_node_goodput_drained_may_be_resumed(run):
    db, _ = run
    states, resume = now_and_resume(db, ("gpu003", "gpu004"))
    assert states == {"gpu003": "validated", "gpu004": "validated"}
    assert resume["host"].to_list() == ["gpu003"] and resume["evidence"][0] == "health check gpu_ecc passed"
