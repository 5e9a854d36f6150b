"""`goodput simulate --scheduler kubernetes`: the Slurm world's history (same seed: the same truth/) written as
Kubernetes exports: JobSets, Kueue Workloads and pods in kubernetes/, NVSentinel XID events in node_health/; every
line ingests (the deliberately malformed ones aside) into k8s_objects and node_events."""
from __future__ import annotations

import json

import polars as pl
import pytest
from click.testing import CliRunner

from analysis import warehouse
from analysis.ingest.engine import ingest_directory
from analysis.simulate.config import preset
from analysis.simulate.run import simulate
from pipelines.cli import main

# seed 3 on 16 nodes x 3 days: every state the mapping writes (NODE_FAIL, PREEMPTED, REQUEUED, CANCELLED, ...)
CFG = dict(nodes=16, days=3, seed=3)


@pytest.fixture(scope="module")
def worlds(tmp_path_factory):
    root = tmp_path_factory.mktemp("k8s")
    simulate(preset("small", **CFG), root / "slurm")
    simulate(preset("small", scheduler="kubernetes", **CFG), root / "k8s")
    con = warehouse.connect(root / "w.duckdb")
    ingest_directory(con, root / "k8s")
    yield root, con
    con.close()


def _rows(con, query, params=None):
    return con.execute(query, params or []).fetchall()


def test_same_truth_as_the_slurm_world(worlds):
    root, _ = worlds
    slurm, k8s = root / "slurm" / "truth", root / "k8s" / "truth"
    assert sorted(p.name for p in slurm.iterdir()) == sorted(p.name for p in k8s.iterdir())
    for path in slurm.iterdir():
        if path.name == "summary.json":  # the scheduler in its config, and its own wall time
            a, b = json.loads(path.read_text()), json.loads((k8s / path.name).read_text())
            assert b["config"].pop("scheduler") == "kubernetes" and "scheduler" not in a["config"]
            assert {k: v for k, v in a.items() if k != "wall_s"} == {k: v for k, v in b.items() if k != "wall_s"}
        elif path.name != "malformed_lines.csv":  # names the files broken, which differ by world
            assert path.read_bytes() == (k8s / path.name).read_bytes(), path.name
    instances = pl.read_csv(k8s / "job_instances.csv")
    assert {"NODE_FAIL", "PREEMPTED", "REQUEUED", "CANCELLED", "COMPLETED", "FAILED"} <= set(instances["state"])


def test_folders_of_each_world(worlds):
    root, _ = worlds
    k8s = {p.name for p in (root / "k8s").iterdir()}
    assert {"kubernetes", "node_health", "kernel", "health", "switch", "tickets", "joblogs"} <= k8s
    assert not {"slurm", "slurm_events"} & k8s
    assert not {"kubernetes", "node_health"} & {p.name for p in (root / "slurm").iterdir()}
    # the kernel's XID lines moved to NVSentinel; the rest of the journal stayed
    assert not any("NVRM: Xid" in p.read_text() for p in (root / "k8s" / "kernel").iterdir())
    assert any("NVRM: Xid" in p.read_text() for p in (root / "slurm" / "kernel").iterdir())


def test_every_line_ingests_but_the_malformed_ones(worlds):
    root, con = worlds
    truth = pl.read_csv(root / "k8s" / "truth" / "malformed_lines.csv")
    assert "kubernetes/" in " ".join(truth["file"])
    got = {(f.split(str(root / "k8s") + "/")[1], n) for f, n in _rows(con, "SELECT file, line_no FROM rejects")}
    assert got == set(truth.select("file", "line_no").iter_rows())
    assert _rows(con, "SELECT count(*) FROM ingested_files WHERE status <> 'ok'")[0][0] == 0
    kinds = dict(_rows(con, "SELECT kind, count(*) FROM k8s_objects GROUP BY kind"))
    # the workloads, and the drains as kubelet Events and a Node watch (tests/test_k8s_node_states.py)
    assert set(kinds) == {"JobSet", "Workload", "Pod", "Event", "Node"}, kinds
    assert _rows(con, "SELECT count(*) FROM node_events WHERE source = 'node_health' AND kind = 'xid'")[0][0] > 0


def test_one_jobset_per_job_and_attempts_match_instances(worlds):
    root, con = worlds
    instances = pl.read_csv(root / "k8s" / "truth" / "job_instances.csv", schema_overrides={"job_id": pl.Utf8})
    jobsets = _rows(con, "SELECT DISTINCT namespace, name, uid FROM k8s_objects WHERE kind = 'JobSet'")
    assert len(jobsets) == len({u for _, _, u in jobsets}) == instances["job_id"].n_unique()
    assert {n for _, n, _ in jobsets} == {"job-" + j.replace("_", "-") for j in instances["job_id"].unique()}
    # every started instance has its pods, one per node, labelled with its restart attempt
    pods = pl.from_records(_rows(con, """
        SELECT DISTINCT labels->>'$."jobset.sigs.k8s.io/jobset-name"' AS js,
               CAST(labels->>'$."jobset.sigs.k8s.io/restart-attempt"' AS BIGINT) AS attempt, uid, node_name, gpus
        FROM k8s_objects WHERE kind = 'Pod'"""), schema=["js", "attempt", "uid", "node", "gpus"], orient="row")
    started = instances.filter(pl.col("start").is_not_null()).with_columns(
        js=pl.lit("job-") + pl.col("job_id").str.replace("_", "-"))
    per = pods.group_by("js", "attempt").agg(pods=pl.col("uid").n_unique(), gpus=pl.col("gpus").sum())
    joined = started.join(per, left_on=["js", "instance"], right_on=["js", "attempt"], how="left")
    assert joined["pods"].null_count() == 0
    assert (joined["pods"] == joined["nodes"]).all() and (joined["gpus"] == joined["gpus_right"]).all()
    assert per.height == started.height  # no attempt without its instance
    # the JobSet's status.restarts reaches the last attempt
    last = dict(_rows(con, "SELECT name, max(restarts) FROM k8s_objects WHERE kind = 'JobSet' GROUP BY name"))
    for job_id, n in instances.group_by("job_id").agg(pl.col("instance").max()).iter_rows():
        assert last["job-" + job_id.replace("_", "-")] == n


def test_node_fail_and_preemption_as_kubernetes_records_them(worlds):
    root, con = worlds
    instances = pl.read_csv(root / "k8s" / "truth" / "job_instances.csv", schema_overrides={"job_id": pl.Utf8})
    disrupted = {(js, int(a), node, reason) for js, a, node, reason in _rows(con, """
        SELECT labels->>'$."jobset.sigs.k8s.io/jobset-name"', labels->>'$."jobset.sigs.k8s.io/restart-attempt"',
               node_name, disruption_reason FROM k8s_objects WHERE kind = 'Pod' AND disruption_reason IS NOT NULL""")}
    xids = {host for (host,) in _rows(con, "SELECT host FROM node_events WHERE source = 'node_health' AND kind = 'xid'")}
    node_fail = instances.filter(pl.col("state") == "NODE_FAIL")
    assert node_fail.height
    for job_id, instance, host in node_fail.select("job_id", "instance", "cause_host").iter_rows():
        assert ("job-" + job_id.replace("_", "-"), instance, host, "DeletionByTaintManager") in disrupted
        assert host in xids  # the fault that took the node down, as NVSentinel reported it
    for job_id, instance in instances.filter(pl.col("state") == "PREEMPTED").select("job_id", "instance").iter_rows():
        assert any(d[:2] == ("job-" + job_id.replace("_", "-"), instance) and d[3] == "PreemptionByScheduler"
                   for d in disrupted)
    evicted = _rows(con, """SELECT count(*) FROM k8s_objects WHERE kind = 'Workload'
                            AND conditions LIKE '%"reason":"Preempted"%' AND restarts >= 1""")[0][0]
    assert evicted >= instances.filter(pl.col("state") == "PREEMPTED")["job_id"].n_unique()


def test_resource_versions_increase_and_states_are_stored_once(worlds):
    _, con = worlds
    bad = _rows(con, """SELECT count(*) FROM (SELECT uid, CAST(resource_version AS BIGINT) AS rv,
                               lag(rv) OVER (PARTITION BY uid ORDER BY file, line_no) AS before FROM k8s_objects)
                        WHERE rv <= before""")[0][0]
    assert bad == 0
    assert _rows(con, "SELECT count(*) - count(DISTINCT (uid, resource_version, deleted)) FROM k8s_objects")[0][0] == 0


def test_cli_scheduler_option(tmp_path):
    out = tmp_path / "k"
    result = CliRunner().invoke(main, ["simulate", "--out", str(out), "--nodes", "8", "--days", "1",
                                       "--scheduler", "kubernetes"])
    assert result.exit_code == 0, result.output
    assert (out / "kubernetes").is_dir() and not (out / "slurm").exists()
    bad = CliRunner().invoke(main, ["simulate", "--out", str(tmp_path / "x"), "--scheduler", "pbs"])
    assert bad.exit_code != 0 and "pbs" in bad.output
