"""Failure attribution against the simulator's truth, Aegis' order, job runs, node incidents, `goodput why`."""
from datetime import datetime, timedelta

import polars as pl
import pytest
from click.testing import CliRunner

from analysis import warehouse
from analysis.derive import attribution
from analysis.derive.taxonomy import load
from pipelines.cli import main
from tests.shared import private_warehouse
from tests.test_simulate import HARDWARE
from tests.test_taxonomy import _events


@pytest.fixture(scope="module")
def attributed(tmp_path_factory, rsc1_256x20):
    """conftest's shared 256 x 20 rsc1 cluster (test_metrics reads it too), in a warehouse of this module's own."""
    _, shared, _ = rsc1_256x20
    root = tmp_path_factory.mktemp("attr")
    con = warehouse.connect(private_warehouse(shared, root))
    yield con, root
    con.close()


def test_primary_causes_match_the_truth(attributed):
    con, root = attributed
    truth = pl.read_csv(root / "src/truth/job_instances.csv", infer_schema_length=0).with_columns(
        pl.col("instance").cast(pl.Int32))
    pred = con.sql("SELECT job_id, instance, cause AS pred, host AS pred_host FROM job_failure_causes").pl()
    m = truth.join(pred, on=["job_id", "instance"], how="left")
    hw_truth = m.filter(pl.col("cause").is_in(HARDWARE))
    right = hw_truth.filter((pl.col("pred") == pl.col("cause")) & (pl.col("pred_host") == pl.col("cause_host"))).height
    predicted_hw = m.filter(pl.col("pred").is_in(HARDWARE)).height
    precision, recall = right / predicted_hw, right / hw_truth.height
    assert hw_truth.height >= 20
    assert precision >= 0.95 and recall >= 0.95, (precision, recall)
    users = m.filter(pl.col("cause") == "user")
    assert (users["pred"] == "user").mean() >= 0.98
    assert m.filter(pl.col("state") == "OUT_OF_MEMORY")["pred"].to_list() == ["oom"] * m.filter(
        pl.col("state") == "OUT_OF_MEMORY").height
    assert con.execute("SELECT count(*) FROM failure_attribution WHERE is_primary AND cause = 'unattributed'"
                       ).fetchall()[0][0] == m.filter((pl.col("state") == "NODE_FAIL") & ~pl.col("cause").is_in(HARDWARE)).height


def test_decoys_are_never_attributed(attributed):
    con, root = attributed
    decoys = pl.read_csv(root / "src/truth/decoys.csv", infer_schema_length=0).with_columns(
        pl.col("event_time").str.to_datetime())
    con.register("decoys", decoys)
    hits = con.execute("SELECT count(*) FROM failure_attribution a JOIN decoys d "
                       "ON a.host = d.host AND a.event_time = d.event_time").fetchall()[0][0]
    assert decoys.height > 20 and hits == 0


def test_summary_views(attributed):
    con, _ = attributed
    share = dict(con.execute("SELECT state, instance_share FROM job_status_breakdown").fetchall())
    assert abs(sum(share.values()) - 1) < 1e-9
    rates = con.sql("SELECT * FROM failure_rates_by_cause").pl()
    assert set(rates["cause"]) >= {"user", "gpu_unavailable"} and (rates["per_1000_node_days"] > 0).all()
    co = con.sql("SELECT * FROM cause_cooccurrence WHERE cause_a = 'gpu_unavailable' AND cause_b = 'pcie'").pl()
    assert co.height == 1 and 0 < co["share_of_a"][0] < 1  # XID 79 often, not always, comes with AER errors
    top = con.sql("SELECT * FROM top_offending_nodes LIMIT 5").pl()
    assert top["failures_blamed"][0] >= top["failures_blamed"][-1] and top.height == 5


def test_node_incidents_link_drains_and_tickets(attributed):
    con, root = attributed
    inc = con.sql("SELECT * FROM node_incidents").pl()
    assert inc.height > 20 and inc["drained"].sum() > 0 and inc["ticket_id"].drop_nulls().len() > 0
    drained = inc.filter(pl.col("drained"))
    assert (drained["returned_at"].drop_nulls() > drained.filter(pl.col("returned_at").is_not_null())["first_event"]).all()
    lemons = set(pl.read_csv(root / "src/truth/nodes.csv").filter(pl.col("is_lemon"))["host"])
    top = con.execute("SELECT host FROM node_incidents WHERE severity = 'critical' GROUP BY host "
                      "ORDER BY count(*) DESC LIMIT 3").fetchall()
    assert {h for (h,) in top} & lemons  # lemons lead the incident counts


def test_job_runs_chain_requeues_and_flag_crash_loops(attributed):
    con, _ = attributed
    requeued = con.execute("SELECT job_id FROM jobs WHERE instance = 2 LIMIT 1").fetchall()[0][0]
    run = con.execute("SELECT run_id, list(instance ORDER BY run_seq) FROM job_runs WHERE job_id = ? GROUP BY run_id",
                      [requeued]).fetchall()
    assert len(run) == 1 and run[0][1][:3] == [0, 1, 2]
    assert con.execute("SELECT count(*) FROM job_runs WHERE run_jobs > 1").fetchall()[0][0] > 0


def test_aegis_order_on_distributed_symptoms(tmp_path):
    con = warehouse.connect(tmp_path / "w.duckdb")
    t1 = datetime(2024, 3, 1, 12)
    t2, t3, t4, t5 = (t1 + timedelta(hours=h) for h in (1, 2, 3, 4))
    hosts = [f"gpu{i:04d}" for i in range(1, 9)]
    con.execute("CREATE OR REPLACE TABLE jobs AS SELECT *, len(nodes) AS n_nodes, 8 * len(nodes) AS n_gpus, "
                "3600 AS elapsed_s, 'u' AS user_name, 'train' AS job_name, NULL::TIMESTAMP AS start_time FROM (VALUES "
                "('1', 0, 'FAILED', ?::TIMESTAMP, ?::VARCHAR[]), ('2', 0, 'FAILED', ?::TIMESTAMP, ?::VARCHAR[]), "
                "('3', 0, 'FAILED', ?::TIMESTAMP, ?::VARCHAR[]), ('4', 0, 'FAILED', ?::TIMESTAMP, ?::VARCHAR[]), "
                "('5', 0, 'FAILED', ?::TIMESTAMP, ?::VARCHAR[])) t(job_id, instance, state, end_time, nodes)",
                [t1, hosts[:5], t2, hosts[:4], t3, hosts[4:], t4, hosts[:4], t5, hosts[:4]])
    nccl = "NCCL WARN Watchdog caught collective operation timeout: WorkNCCL(SeqNum=9, OpType=ALLREDUCE)"
    ev = lambda t, h, n, **k: (t, h, k.get("source", "app"), k.get("kind", "other"), k.get("code"), None,  # noqa: E731
                               k.get("msg", nccl), k.get("device"), h, "a.log", n)
    rows = []
    # job 1: timeouts on all 5 hosts, clustering on gpu0003 (it reports the most)
    for i, h in enumerate(hosts[:5]):
        rows += [ev(t1 - timedelta(seconds=60 - k), h, i * 10 + k) for k in range(4 if h == "gpu0003" else 1)]
    # job 2: timeouts on 2 of its 4 hosts: those hosts are blamed
    rows += [ev(t2 - timedelta(seconds=30), "gpu0002", 100), ev(t2 - timedelta(seconds=29), "gpu0004", 101)]
    # job 3: a timeout on gpu0007 and a critical XID 79 on gpu0006: host-side first
    rows += [ev(t3 - timedelta(seconds=30), "gpu0007", 200),
             ev(t3 - timedelta(seconds=20), "gpu0006", 201, source="kernel", kind="xid", code="79", device="0000:18:00",
                msg="NVRM: Xid (PCI:0000:18:00): 79, pid=1, name=python, GPU has fallen off the bus.")]
    # job 4: one timeout on each of 4 hosts: no host stands out -> network or configuration, no host blamed
    rows += [ev(t4 - timedelta(seconds=30), h, 300 + i) for i, h in enumerate(hosts[:4])]
    # job 5: timeouts on 3 hosts and an IB link down (a host-side warning) on gpu0004: host-side first
    rows += [ev(t5 - timedelta(seconds=30), h, 400 + i) for i, h in enumerate(hosts[:3])]
    rows.append(ev(t5 - timedelta(seconds=40), "gpu0004", 410, source="kernel", kind="ib_link", code="down",
                   msg="mlx5_core 0000:4b:00.0 ibp75s0: Link down"))
    _events(con, rows)
    tax = load()
    attribution.classify_events(con, tax)
    attribution.attribute_failures(con, tax)
    primary = dict((j, (c, h)) for j, c, h in con.execute(
        "SELECT job_id, cause, host FROM failure_attribution WHERE is_primary").fetchall())
    assert primary["1"] == ("nccl_timeout", "gpu0003")
    assert primary["2"][0] == "nccl_timeout" and primary["2"][1] in ("gpu0002", "gpu0004")
    assert primary["3"] == ("gpu_unavailable", "gpu0006")
    assert primary["4"] == ("nccl_timeout", None)
    assert primary["5"] == ("infiniband_link", "gpu0004")
    rows3 = con.execute("SELECT count(*) FROM failure_attribution WHERE job_id = '3'").fetchall()[0][0]
    assert rows3 == 2  # co-occurring events are kept, not just the primary
    con.close()


def test_goodput_why_explains_a_simulated_failure(attributed):
    con, root = attributed
    job_id, instance, cause, host = con.execute(
        "SELECT job_id, instance, cause, host FROM job_failure_causes WHERE cause = 'gpu_unavailable' LIMIT 1").fetchall()[0]
    # a crash loop: an instance that landed again on the node blamed for the one before
    loop = con.execute("""
        SELECT b.job_id, b.instance, a.host FROM job_failure_causes a JOIN jobs b
          ON b.job_id = a.job_id AND b.instance = a.instance + 1 AND list_contains(b.nodes, a.host)
        ORDER BY b.job_id, b.instance LIMIT 1""").fetchall()[0]
    con.close()  # the CLI opens the file read-only, which DuckDB refuses beside a writer in one process
    result = CliRunner().invoke(main, ["why", "--db", str(root / "w.duckdb"), job_id])
    assert result.exit_code == 0, result.output
    assert f"instance {instance}:" in result.output
    assert f"primary cause: gpu_unavailable (hardware) on {host}, rule xid-79" in result.output
    assert "GPU has fallen off the bus" in result.output
    assert "XID 79 (GPU has fallen off the bus): NVIDIA's resolution: Drain" in result.output
    looped = CliRunner().invoke(main, ["why", "--db", str(root / "w.duckdb"), loop[0]]).output
    block = looped.split(f"instance {loop[1]}:", 1)[1].split("\ninstance ", 1)[0]
    assert f"note: this instance ran on {loop[2]} again, the node blamed for the instance before" in block
    missing = CliRunner().invoke(main, ["why", "--db", str(root / "w.duckdb"), "424242"])
    assert missing.exit_code != 0 and "no job or host 424242" in missing.output
