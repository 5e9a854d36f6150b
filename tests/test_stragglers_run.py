"""A site that exports only step times (issue 32): one telemetry metric, `iteration_time_seconds` per host, beside
a sacct dump. `goodput run` withholds no step (the telemetry detector ran on one metric without crashing), and
the straggler is named with its span and cost, in straggler_episodes and in `goodput why`. The same node straggles
again in a second job with other peers: a node problem, so a node event (degraded_pace) and a node action with the
two jobs as evidence."""
from __future__ import annotations

import json
from datetime import datetime, timedelta

import duckdb
import pytest
from click.testing import CliRunner

from pipelines.cli import main

HOSTS = [f"gpu{i:03d}" for i in range(1, 11)]
START = datetime(2024, 3, 1, 10, 0)
SLOW, SLOW_FROM, SLOW_TO, FACTOR = "gpu007", 20, 40, 1.6  # minutes after the start
# the second job, an hour later on gpu005-gpu014: gpu007 slow again, from minute 10 to 30
HOSTS_2, START_2 = [f"gpu{i:03d}" for i in range(5, 15)], START + timedelta(hours=1, minutes=5)


def _job(job_id: str, start: datetime, nodelist: str) -> str:
    end = start + timedelta(hours=1)
    return (f"{job_id}|{job_id}|pretrain|alice|llm|gpu|high|1000|COMPLETED|0:0|None|{start:%Y-%m-%dT%H:%M:%S}|"
            f"{start:%Y-%m-%dT%H:%M:%S}|{start:%Y-%m-%dT%H:%M:%S}|{end:%Y-%m-%dT%H:%M:%S}|01:00:00|10|"
            f"billing=640,cpu=640,gres/gpu=80,mem=5000G,node=10|{nodelist}|0|sbatch -N10 pretrain.sh")


def _samples(start: datetime, hosts: list[str], slow_from: int, slow_to: int) -> list[str]:
    lines = []
    for k in range(360):  # a sample every 10 s
        t = start + timedelta(seconds=10 * k)
        for i, h in enumerate(hosts):
            value = 1.0 + 0.01 * ((k * 7 + i * 3) % 5)
            if h == SLOW and slow_from * 6 <= k < slow_to * 6:
                value *= FACTOR
            lines.append(f"{t:%Y-%m-%dT%H:%M:%S}Z,{h},iteration_time_seconds,,{value:.4f}")
    return lines


def _source(root):
    (root / "slurm").mkdir(parents=True)
    header = ("JobID|JobIDRaw|JobName|User|Account|Partition|QOS|Priority|State|ExitCode|Reason|Submit|Eligible|"
              "Start|End|Elapsed|NNodes|AllocTRES|NodeList|Restarts|SubmitLine")
    jobs = [_job("500", START, "gpu[001-010]"), _job("501", START_2, "gpu[005-014]")]
    (root / "slurm" / "sacct.txt").write_text("\n".join([header, *jobs]) + "\n")
    (root / "telemetry").mkdir()
    lines = ["time,host,metric,gpu,value", *_samples(START, HOSTS, SLOW_FROM, SLOW_TO),
             *_samples(START_2, HOSTS_2, 10, 30)]
    (root / "telemetry" / "steps.csv").write_text("\n".join(lines) + "\n")


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    root = tmp_path_factory.mktemp("steps")
    _source(root / "src")
    db, out = root / "w.duckdb", root / "out"
    result = CliRunner().invoke(main, ["run", "--source", str(root / "src"), "--db", str(db), "--out", str(out), "-q"])
    return db, result


def test_one_metric_withholds_no_step(run):
    db, result = run
    assert "withheld" not in result.output.lower() and "too many values" not in result.output, result.output
    con = duckdb.connect(str(db), read_only=True)
    try:
        assert con.execute("SELECT count(*) FROM withheld_steps").fetchone()[0] == 0
    finally:
        con.close()


def test_the_straggler_is_named_with_its_span_and_cost(run):
    db, _ = run
    con = duckdb.connect(str(db), read_only=True)
    try:
        rows = con.execute("SELECT host, start_time, end_time, kind, slowdown, cost_seconds, source "
                           "FROM straggler_episodes WHERE job_id = '500'").fetchall()
    finally:
        con.close()
    (host, start, end, kind, slowdown, cost, source) = rows[0]
    assert len(rows) == 1 and (host, kind, source) == (SLOW, "transient", "telemetry")
    assert start == START + timedelta(minutes=SLOW_FROM) and end == START + timedelta(minutes=SLOW_TO)
    assert slowdown == pytest.approx(FACTOR, rel=0.03)
    # 20 minutes at the slow host's pace instead of its peers': 20 min x (1 - 1/1.6), within the peers' noise
    assert cost == pytest.approx(20 * 60 * (1 - 1 / FACTOR), rel=0.05)


def test_why_names_the_host_the_span_and_the_cost(run):
    db, _ = run
    text = CliRunner().invoke(main, ["why", "--db", str(db), "500"]).output
    assert f"ran 1.6x slower for 20 min after {START + timedelta(minutes=SLOW_FROM):%Y-%m-%d %H:%M:%S} because of {SLOW}" \
        in text, text
    data = json.loads(CliRunner().invoke(main, ["why", "--db", str(db), "500", "--json"]).output)
    assert [s["host"] for s in data["instances"][0]["stragglers"]] == [SLOW]


def test_the_wait_is_a_bucket_of_goodput_lost_that_adds_up(run):
    """The straggler's cost x the job's 80 GPUs is lost GPU-hours of its day, taken from productive work: the
    capacity split's parts still add up to the capacity."""
    db, _ = run
    con = duckdb.connect(str(db), read_only=True)
    try:
        cost = con.execute("SELECT sum(cost_seconds) FROM straggler_episodes").fetchone()[0]
        lost, scheduled, productive, failures, preempted = con.execute(
            "SELECT lost_straggler_gpu_hours, scheduled_gpu_hours, productive_gpu_hours, lost_failure_gpu_hours, "
            "lost_preemption_gpu_hours FROM goodput_daily").fetchone()
    finally:
        con.close()
    assert lost == pytest.approx(cost * 80 / 3600, abs=1e-6)
    assert productive + lost + failures + preempted == pytest.approx(scheduled)


def test_the_report_lists_the_straggler(run):
    """The report's Stragglers section: the episodes' node and GPU-hours lost, equal to the warehouse's, and the
    nodes they cost the most with the verdict."""
    import re

    db, result = run
    report = re.search(r"Report: (\S+)", result.output)[1]
    html = open(report).read()
    con = duckdb.connect(str(db), read_only=True)
    try:
        costs = [c * 80 / 3600 for (c,) in con.execute(
            "SELECT cost_seconds FROM straggler_episodes ORDER BY cost_seconds DESC").fetchall()]
    finally:
        con.close()
    rows = re.findall(r'<tr data-host="([^"]+)">.*?data-gpu-hours="([^"]+)"', re.search(
        r'<table id="stragglers">.*?</table>', html, re.S)[0], re.S)
    assert [h for h, _ in rows] == [SLOW, SLOW] and [float(g) for _, g in rows] == pytest.approx(costs)
    assert "2 straggler episodes on 1 node" in re.sub(r"<[^>]+>", "", html)
    nodes = re.search(r'<table id="straggler-nodes">.*?</table>', html, re.S)[0]
    assert re.findall(r'<tr data-host="([^"]+)">', nodes) == [SLOW] and "straggled in 2 of the 2 jobs" in nodes


def test_a_node_slow_in_two_jobs_is_a_node_event_and_a_node_action(run):
    """gpu007 straggled in both jobs, with other peers each time: the node's problem. Each episode is a node event
    (cause degraded_pace) that no failure is blamed on, and the node is listed for validation after its job with
    the two jobs as evidence."""
    db, _ = run
    con = duckdb.connect(str(db), read_only=True)
    try:
        verdicts = con.execute("SELECT job_id, origin, basis FROM straggler_episodes ORDER BY job_id").fetchall()
        events = con.execute("SELECT host, job_id, cause FROM classified_events WHERE source = 'straggler' "
                             "ORDER BY job_id").fetchall()
        blamed = con.execute("SELECT count(*) FROM failure_attribution WHERE source = 'straggler'").fetchone()[0]
        action = con.execute("SELECT action, reason, jobs, cause FROM node_actions WHERE host = ?", [SLOW]).fetchone()
    finally:
        con.close()
    assert verdicts == [("500", "node", "repeat"), ("501", "node", "repeat")]
    assert events == [(SLOW, "500", "degraded_pace"), (SLOW, "501", "degraded_pace")] and blamed == 0
    action_, reason, jobs, cause = action
    assert (action_, jobs, cause) == ("drain_after_job", ["500", "501"], "degraded_pace")
    assert reason.startswith("slow node: straggled in 2 jobs at 1.6") and "validate before new work" in reason


def test_the_fleet_report_has_each_clusters_stragglers(run, tmp_path):
    """The fleet report over this cluster's warehouse: its episodes, the GPU-hours its jobs lost waiting and their
    split by verdict (all the node's here)."""
    import re
    import shutil

    from reports.fleet import render_fleet_report

    db, _ = run
    (tmp_path / "db").mkdir()
    shutil.copy(db, tmp_path / "db" / "steps.duckdb")
    con = duckdb.connect(str(db), read_only=True)
    try:
        lost = con.execute("SELECT sum(cost_seconds) * 80 / 3600 FROM straggler_episodes").fetchone()[0]
    finally:
        con.close()
    html = render_fleet_report(tmp_path / "db", tmp_path / "fleet").read_text()
    # two hours of data judge no trend: the headline says so rather than "no cluster is getting worse" (issue 34)
    headline = re.search(r'<p class="headline" id="headline">(.*?)</p>', html, re.S)[1]
    assert "No cluster can be judged yet" in headline and "getting worse" not in headline
    table = re.search(r'<table id="stragglers">.*?</table>', html, re.S)[0]
    cell = lambda key: re.search(rf'data-cluster="steps" data-key="{re.escape(key)}" data-value="([^"]+)"', table)[1]  # noqa: E731
    assert int(cell("stragglers_episodes")) == 2 and float(cell("stragglers_gpu_hours")) == pytest.approx(lost)
    assert float(cell("stragglers_gpu_hours:node")) == pytest.approx(lost)
    assert float(cell("stragglers_gpu_hours:job")) == 0
