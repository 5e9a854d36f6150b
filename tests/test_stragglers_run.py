"""A site that exports only step times (issue 32): one telemetry metric, `iteration_time_seconds` per host, beside
a sacct dump. `goodput run` withholds no step (the telemetry detector ran on one metric without crashing), and
the straggler is named with its span and cost, in straggler_episodes and in `goodput why`."""
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


def _source(root):
    (root / "slurm").mkdir(parents=True)
    header = ("JobID|JobIDRaw|JobName|User|Account|Partition|QOS|Priority|State|ExitCode|Reason|Submit|Eligible|"
              "Start|End|Elapsed|NNodes|AllocTRES|NodeList|Restarts|SubmitLine")
    end = START + timedelta(hours=1)
    job = (f"500|500|pretrain|alice|llm|gpu|high|1000|COMPLETED|0:0|None|{START:%Y-%m-%dT%H:%M:%S}|"
           f"{START:%Y-%m-%dT%H:%M:%S}|{START:%Y-%m-%dT%H:%M:%S}|{end:%Y-%m-%dT%H:%M:%S}|01:00:00|10|"
           f"billing=640,cpu=640,gres/gpu=80,mem=5000G,node=10|gpu[001-010]|0|sbatch -N10 pretrain.sh")
    (root / "slurm" / "sacct.txt").write_text(f"{header}\n{job}\n")
    (root / "telemetry").mkdir()
    lines = ["time,host,metric,gpu,value"]
    for k in range(360):  # a sample every 10 s
        t = START + timedelta(seconds=10 * k)
        for i, h in enumerate(HOSTS):
            value = 1.0 + 0.01 * ((k * 7 + i * 3) % 5)
            if h == SLOW and SLOW_FROM * 6 <= k < SLOW_TO * 6:
                value *= FACTOR
            lines.append(f"{t:%Y-%m-%dT%H:%M:%S}Z,{h},iteration_time_seconds,,{value:.4f}")
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
                           "FROM straggler_episodes").fetchall()
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
    """The report's Stragglers section: the episode's node, GPUs and GPU-hours lost, equal to the warehouse's."""
    import re

    db, result = run
    report = re.search(r"Report: (\S+)", result.output)[1]
    html = open(report).read()
    con = duckdb.connect(str(db), read_only=True)
    try:
        lost = con.execute("SELECT sum(cost_seconds) * 80 / 3600 FROM straggler_episodes").fetchone()[0]
    finally:
        con.close()
    row = re.search(r'<tr data-host="([^"]+)">.*?data-gpu-hours="([^"]+)"', re.search(
        r'<table id="stragglers">.*?</table>', html, re.S)[0], re.S)
    assert row[1] == SLOW and float(row[2]) == pytest.approx(lost)
    assert "1 straggler episode on 1 node" in re.sub(r"<[^>]+>", "", html)
