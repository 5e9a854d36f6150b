"""One simulated history run twice through `goodput run`: written as a Slurm cluster (sacct, sacctmgr events, dmesg
XIDs) and as a Kubernetes one (JobSets, Kueue Workloads and pods, NVSentinel XID events, kubelet Node events).
goodput must tell the same story of both: the same failures blamed on the same nodes, the same ETTR, the same
lemons and node actions (issue 36)."""
from __future__ import annotations

import polars as pl
import pytest
from click.testing import CliRunner

from analysis import warehouse
from analysis.simulate.config import preset
from analysis.simulate.run import simulate
from pipelines.cli import main
from pipelines import runner  # noqa: F401 - the Dagster definitions, imported before quick_telemetry patches them
from tests.shared import quick_telemetry
from tests.test_simulate import HARDWARE

# small preset at a failure rate high enough for ~20 hardware failures in 32 nodes x 6 days (seed 5: a lemon,
# drains for health checks and for maintenance, jobs excluding nodes)
CFG = dict(nodes=32, days=6, seed=5, failure_rate=150.0)
WORLDS = ("slurm", "kubernetes")
# a Kubernetes job id namespace/job-<Slurm id with '-' for '_'> (analysis/simulate/kubernetes.py jobset_name)
SLURM_ID = r"regexp_replace(regexp_extract({col}, 'job-([0-9][0-9_-]*)$', 1), '-', '_')"


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    root = tmp_path_factory.mktemp("parity")
    for world in WORLDS:
        simulate(preset("small", scheduler=world, **CFG), root / world / "src")
        with quick_telemetry():  # the detectors are judged elsewhere; here both worlds only need the same ones
            result = CliRunner().invoke(main, ["run", "--source", str(root / world / "src"),
                                               "--db", str(root / world / "w.duckdb"),
                                               "--out", str(root / world / "out"), "-q"])
        assert result.exit_code == 0, result.output
        if world == "kubernetes":
            assert "no Slurm accounting" not in result.output
    cons = {w: warehouse.connect(root / w / "w.duckdb", read_only=True) for w in WORLDS}
    yield root, cons
    for con in cons.values():
        con.close()


def _frame(con, query: str, world: str, col: str = "job_id") -> pl.DataFrame:
    """``query``'s rows with ``col`` as the Slurm job id in both worlds."""
    expr = col if world == "slurm" else SLURM_ID.format(col=col)
    return con.sql(f"SELECT * REPLACE ({expr} AS {col}) FROM ({query})").pl()


def _precision_recall(root, con, world) -> tuple[float, float, int]:
    truth = pl.read_csv(root / world / "src/truth/job_instances.csv", infer_schema_length=0).with_columns(
        pl.col("instance").cast(pl.Int32))
    pred = _frame(con, "SELECT job_id, instance, cause AS pred, host AS pred_host FROM job_failure_causes", world)
    m = truth.join(pred, on=["job_id", "instance"], how="left")
    hw = m.filter(pl.col("cause").is_in(HARDWARE))
    right = hw.filter((pl.col("pred") == pl.col("cause")) & (pl.col("pred_host") == pl.col("cause_host"))).height
    predicted = m.filter(pl.col("pred").is_in(HARDWARE)).height
    return right / predicted, right / hw.height, hw.height


def test_attribution_precision_and_recall_within_002_of_the_slurm_world(runs):
    root, cons = runs
    (p_s, r_s, n_s), (p_k, r_k, n_k) = (_precision_recall(root, cons[w], w) for w in WORLDS)
    assert n_s == n_k >= 15
    assert abs(p_s - p_k) <= 0.02 and abs(r_s - r_k) <= 0.02, ((p_s, r_s), (p_k, r_k))
    assert min(p_s, r_s, p_k, r_k) >= 0.9
    # and instance by instance: the same primary cause on the same host
    q = "SELECT job_id, instance, cause, host FROM job_failure_causes"
    slurm, k8s = (_frame(cons[w], q, w).sort("job_id", "instance") for w in WORLDS)
    assert slurm.height > 50 and slurm.equals(k8s)


def test_same_ettr(runs):
    _, cons = runs
    q = "SELECT run_id, n_gpus, instances, wallclock_s, productive_s, ettr, interruptions, failures FROM job_run_ettr"
    slurm, k8s = (_frame(cons[w], q, w, "run_id").sort("run_id") for w in WORLDS)
    assert slurm.height > 100 and slurm["run_id"].equals(k8s["run_id"])
    for col in slurm.columns[1:]:
        assert (slurm[col] - k8s[col]).abs().max() < 1e-6, col


def test_same_lemons_node_actions_and_drains(runs):
    """The same lemons (Meta's thresholds and the scores), the same node actions, the same first drain per node."""
    root, cons = runs
    lemons = {w: cons[w].sql("SELECT host, is_lemon, meta_is_lemon, score FROM lemon_scores "
                             "QUALIFY as_of = max(as_of) OVER () ORDER BY host").pl() for w in WORLDS}
    assert lemons["slurm"]["is_lemon"].any() and lemons["slurm"].equals(lemons["kubernetes"])
    # every signal alike but the times out of service, which Kubernetes records differently (docs/sources.md, from
    # events to node states): a maintenance cordon carries no reason, so it counts as a drain where Slurm's
    # "maintenance: ..." does not; a fault on a node already cordoned adds no cordon where Slurm records a drain
    features = {w: cons[w].sql("SELECT * FROM lemon_features ORDER BY as_of, host").pl() for w in WORLDS}
    assert features["slurm"]["excluded_jobs"].sum() > 0 and features["slurm"]["out_of_service"].sum() > 0
    out = ["out_of_service", "hours_out_of_service", "drained_incidents", "drained_incidents_per_30d"]
    assert features["slurm"].drop(out).equals(features["kubernetes"].drop(out))
    actions = {w: cons[w].sql("SELECT host, action, cause FROM node_actions ORDER BY ALL").fetchall() for w in WORLDS}
    assert actions["slurm"] and actions["slurm"] == actions["kubernetes"]
    # the drains for a health check as cordons: the same nodes, from the same times, for the same reason
    q = ("SELECT host, time_start, state, reason FROM node_states WHERE reason LIKE 'healthcheck:%' "
         "QUALIFY row_number() OVER (PARTITION BY host ORDER BY time_start) = 1 ORDER BY ALL")
    drains = {w: cons[w].sql(q).fetchall() for w in WORLDS}
    assert len(drains["slurm"]) >= 5 and drains["slurm"] == drains["kubernetes"]


def test_a_kubernetes_only_cluster_runs_and_its_jobs_are_the_truths_instances(runs):
    """No slurm/ folder: `goodput run` took its jobs from kubernetes/, and every instance the simulator recorded
    is a job instance with the state Slurm would have given it."""
    root, cons = runs
    src, con = root / "kubernetes" / "src", cons["kubernetes"]
    assert not (src / "slurm").exists()
    pairs = con.execute("""
        WITH t AS (SELECT replace(job_id, '_', '-') AS jid, instance::INTEGER AS instance, state AS truth
                   FROM read_csv($1, all_varchar = true)),
             j AS (SELECT regexp_extract(job_id, 'job-(.*)$', 1) AS jid, instance, state FROM jobs)
        SELECT truth, state, count(*) FROM t FULL JOIN j USING (jid, instance) GROUP BY ALL ORDER BY ALL""",
                        [str(src / "truth" / "job_instances.csv")]).fetchall()
    # job names are the applications' (app.kubernetes.io/name), shared by reruns, so job_runs chains as on Slurm
    names, ids, named_by_id = con.execute("SELECT count(DISTINCT job_name), count(DISTINCT job_id), "
                                          "count(*) FILTER (WHERE starts_with(job_name, 'job-')) FROM jobs"
                                          ).fetchall()[0]
    assert names < ids and named_by_id == 0
    assert pairs and all(truth == state for truth, state, _ in pairs), pairs
    assert {"NODE_FAIL", "PREEMPTED", "COMPLETED", "FAILED"} <= {truth for truth, _, _ in pairs}


def test_each_world_exports_its_own_schedulers_scripts(runs):
    """export_platform auto: the Slurm world's run wrote drain.sh, the Kubernetes world's kubectl.sh and
    node_conditions.json, from the same node actions (the same hosts in the blocklist)."""
    root, cons = runs
    written = {w: {p.name for p in (root / w / "out" / "exports").iterdir()} for w in WORLDS}
    assert "drain.sh" in written["slurm"] and not {"kubectl.sh", "node_conditions.json"} & written["slurm"]
    assert {"kubectl.sh", "node_conditions.json"} <= written["kubernetes"] and "drain.sh" not in written["kubernetes"]
    blocklists = {w: (root / w / "out" / "exports" / "blocklist.txt").read_text() for w in WORLDS}
    assert blocklists["slurm"].strip() and blocklists["slurm"] == blocklists["kubernetes"]
    assert "kubectl cordon" in (root / "kubernetes" / "out" / "exports" / "kubectl.sh").read_text()


def test_each_report_speaks_its_schedulers_words(runs):
    root, _ = runs
    slurm, k8s = ((root / w / "out" / "reports" / "latest.html").read_text() for w in WORLDS)
    assert "sbatch --exclude=" in slurm and "NotIn" not in slurm and "Slurm&#39;s DOWN, DRAIN" in slurm
    assert "kubernetes.io/hostname NotIn [" in k8s and "sbatch" not in k8s and "in Slurm" not in k8s
