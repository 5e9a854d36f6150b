"""Warehouse metrics against what the simulator's truth implies."""
import polars as pl
import pytest

from analysis import warehouse
from analysis.derive import metrics
from analysis.derive.taxonomy import load
from analysis.ingest.engine import ingest_directory
from analysis.package_files import demo_source
from analysis.simulate.config import preset
from assets.pure_builds import build_all
from tests.shared import private_warehouse
from tests.test_simulate import HARDWARE

CFG = preset("rsc1", nodes=256, days=20, seed=1, telemetry_jobs=0)


@pytest.fixture(scope="module")
def measured(tmp_path_factory, rsc1_256x20):
    """conftest's shared 256 x 20 rsc1 cluster (test_attribution reads it too), in a warehouse of this module's own."""
    cfg, shared, value = rsc1_256x20
    assert cfg == CFG
    root = tmp_path_factory.mktemp("metrics")
    con = warehouse.connect(private_warehouse(shared, root))
    rate, summary = value["built"]["failure_rates"], value["built"]["goodput"]
    truth = pl.read_csv(root / "src/truth/job_instances.csv", infer_schema_length=0).with_columns(
        pl.col("instance").cast(pl.Int32), pl.col("gpus").cast(pl.Int64), pl.col("nodes").cast(pl.Int64),
        *[pl.col(c).str.to_datetime(strict=False) for c in ("start", "end", "eligible")])
    yield con, truth, rate, summary
    con.close()


def test_run_ettr_matches_the_truth_timeline(measured):
    con, truth, _, _ = measured
    u0, dt = 300.0, 3600.0
    t = truth.filter(pl.col("start").is_not_null() & pl.col("end").is_not_null()).sort("job_id", "instance")
    started = truth.filter(pl.col("start").is_not_null())
    last = started.group_by("job_id").agg(last=pl.col("instance").max())  # a still-running last instance counts
    t = t.join(last, on="job_id").with_columns(run_s=(pl.col("end") - pl.col("start")).dt.total_seconds(),
                                                continued=pl.col("instance") < pl.col("last"))
    t = t.with_columns(unprod=pl.min_horizontal(pl.lit(u0), pl.col("run_s")) + pl.when(
        pl.col("continued") & (pl.col("state") != "COMPLETED") & (pl.col("run_s") > u0))
        .then((pl.col("run_s") - u0) % dt).otherwise(0.0))
    expected = t.group_by("job_id").agg(
        w=(pl.col("end").max() - pl.col("eligible").min()).dt.total_seconds(), s=pl.col("run_s").sum(),
        u=pl.col("unprod").sum(), instances=pl.len()).with_columns(ettr=(pl.col("s") - pl.col("u")) / pl.col("w"))
    # runs of one job id (job_runs counts a later job still running, which job_run_ettr's `jobs` does not)
    got = con.sql("""SELECT run_id AS job_id, ettr AS measured, instances AS n FROM job_run_ettr
                     WHERE run_id IN (SELECT run_id FROM job_runs GROUP BY run_id HAVING count(DISTINCT job_id) = 1)""").pl()
    both = expected.join(got, on="job_id")
    multi = both.filter(pl.col("instances") > 1)
    assert both.height > 1000 and multi.height > 50
    assert (both["instances"] == both["n"]).all()
    assert (both["ettr"] - both["measured"]).abs().max() < 1e-3
    assert 0 < multi["measured"].mean() < 1


def test_cluster_failure_rate_and_mttf(measured):
    con, truth, rate, _ = measured
    hw = truth.filter(pl.col("cause").is_in(HARDWARE))
    upper = hw.filter((pl.col("state") == "FAILED") | ((pl.col("state") == "NODE_FAIL") & (pl.col("gpus") > 128))).height
    node_days = truth.filter(pl.col("end").is_not_null() & pl.col("start").is_not_null()).select(
        (pl.col("nodes") * (pl.col("end") - pl.col("start")).dt.total_seconds()).sum() / 86400).item()
    r_truth = upper / node_days
    assert 0.5 * r_truth <= rate["r_per_node_day"] <= 1.05 * r_truth, (rate, r_truth)
    # per job size: the truth's runtime and hardware-caused failures in each bucket
    ran = truth.filter(pl.col("end").is_not_null() & pl.col("start").is_not_null()).with_columns(
        bucket=(8 * (pl.col("gpus").clip(lower_bound=1) / 8).ceil()).cast(pl.Int64),  # up to a multiple of 8 (Meta Fig. 7)
        hours=(pl.col("end") - pl.col("start")).dt.total_seconds() / 3600)
    # infrastructure failures: hardware, and the NCCL timeouts the job logs now show (domain network)
    expected = ran.group_by("bucket").agg(hours=pl.col("hours").sum(),
                                          failures=pl.col("cause").is_in([*HARDWARE, "nccl_timeout"]).sum())
    mttf = con.sql("SELECT * FROM mttf_by_job_size WHERE failures >= 2").pl().join(
        expected, left_on="bucket_gpus", right_on="bucket")
    assert mttf.height >= 2
    for b in mttf.iter_rows(named=True):
        truth_mttf = b["hours"] / b["failures_right"]
        assert b["mttf_ci_low_hours"] <= truth_mttf <= b["mttf_ci_high_hours"], b
        assert b["mttf_hours"] == pytest.approx(truth_mttf, rel=0.25)
    proj = dict(con.execute("SELECT gpus, projected_mttf_hours FROM mttf_projection").fetchall())
    assert proj[131072] == pytest.approx(24 / (16384 * rate["r_per_node_day"]))


def test_second_order_preemptions_match_truth(measured):
    con, truth, _, summary = measured
    hw_prev = truth.filter(pl.col("cause").is_in(HARDWARE)).select(
        "job_id", by=pl.concat_str(pl.col("job_id"), pl.lit(":"), (pl.col("instance") + 1).cast(pl.Utf8)))
    second = truth.filter((pl.col("state") == "PREEMPTED") & pl.col("preempted_by").is_in(hw_prev["by"]))
    got = con.execute("SELECT count(*) FROM second_order_preemptions").fetchall()[0][0]
    assert second.height >= 3 and abs(got - second.height) <= max(3, 0.2 * second.height), (got, second.height)
    assert summary["second_order_preemptions"] == got
    assert 0 < summary["second_order_share_of_loss"] < 1


def test_goodput_and_time_series(measured):
    con, _, _, summary = measured
    assert 0.3 < summary["goodput"] < 1.0
    days = con.sql("SELECT * FROM goodput_daily").pl()
    assert days.height >= 19 and (days["productive_gpu_hours"] <= days["capacity_gpu_hours"]).all()
    rolling = con.sql("SELECT * FROM failure_rate_over_time WHERE rolling_30d_per_1000_node_days > 0").pl()
    assert rolling.height > 0 and set(rolling["cause"]) <= set(HARDWARE) | {"unattributed", "system_services", "nccl_timeout"}
    added = con.execute("SELECT first_seen FROM health_check_first_seen WHERE health_check = 'gpu_row_remap'").fetchall()
    assert added and added[0][0].day == 11  # the check added halfway through a 20-day run
    downtime = con.sql("SELECT * FROM run_downtime").pl()
    assert downtime.height > 0 and (downtime["reinit_s"] >= 300).all()
    pdeg = con.sql("SELECT * FROM iteration_degradation WHERE origin = 'benchmark'").pl()
    assert pdeg.height > 0 and pdeg["p_deg"].is_between(0, 1).all()


def test_per_account_checkpoint_override(tmp_path, measured):
    con, _, _, _ = measured
    f = tmp_path / "ettr.yaml"
    f.write_text("accounts:\n  llm: {checkpoint_min: 10, restart_min: 1}\n")
    cfg = metrics.MetricsConfig.from_file(f)
    metrics.build_run_ettr(con, cfg)
    params = dict(con.execute("SELECT account, any_value(dt_s) FROM job_run_ettr GROUP BY account").fetchall())
    assert params["llm"] == 600 and params["vision"] == 3600
    metrics.build_run_ettr(con, metrics.MetricsConfig())


def test_capacity_counts_each_nodes_gpus_from_the_allocations(tmp_path):
    """A fleet of 4-GPU nodes (its multi-node jobs get 4 per node) has half the capacity of the 8-GPU
    sample; a node some job was given more GPUs on has at least those."""
    import re
    import shutil
    src = tmp_path / "src"
    shutil.copytree(demo_source(), src)
    sacct = src / "slurm" / "sacct-2024-03-01.txt"

    def halve(m):  # gres/gpu=32 -> 16: every allocation at 4 GPUs per node instead of 8
        return f"gres/gpu={max(1, int(m.group(1)) // 2)}"
    lines = sacct.read_text().splitlines()
    # job 1002 keeps its 8 GPUs on gpu005: that node has at least 8
    lines = [ln if ln.startswith("1002") else re.sub(r"gres/gpu=(\d+)", halve, ln) for ln in lines]
    sacct.write_text("\n".join(lines) + "\n")
    con = warehouse.connect(tmp_path / "w.duckdb")
    ingest_directory(con, src)
    build_all(con, load(), metrics.MetricsConfig())
    gpus = dict(con.execute("SELECT host, gpus FROM node_gpus").fetchall())
    basis = dict(con.execute("SELECT host, basis FROM node_gpus").fetchall())
    assert gpus.pop("gpu005") == 8 and basis["gpu005"] == "allocated on this node"
    assert gpus and set(gpus.values()) == {4}
    capacity = con.execute("SELECT DISTINCT capacity_gpu_hours FROM goodput_daily").fetchall()
    assert capacity == [((4 * len(gpus) + 8) * 24.0,)]
    con.close()
