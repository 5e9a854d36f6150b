"""The cluster simulator: deterministic, ingestible, Meta-like shares, truth that matches the logs."""
import hashlib
from datetime import datetime

import polars as pl
import pytest

from analysis import warehouse
from analysis.derive import joblogs
from analysis.derive.jobs import build_jobs, map_switch_ports
from analysis.ingest.engine import ingest_directory
from analysis.simulate.config import preset
from analysis.simulate.run import simulate

HARDWARE = ("gpu_memory", "gpu_unavailable", "pcie", "nvlink", "gpu_driver_firmware", "infiniband_link",
            "filesystem_mount", "host_memory")


def digest(root):
    return {str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(root.rglob("*")) if p.is_file() and p.name != "summary.json"}


def test_same_seed_same_files_other_seed_other_files(tmp_path):
    cfg = preset("small", nodes=16, days=3)
    simulate(cfg, tmp_path / "a")
    simulate(cfg, tmp_path / "b")
    simulate(preset("small", nodes=16, days=3, seed=2), tmp_path / "c")
    assert digest(tmp_path / "a") == digest(tmp_path / "b")
    assert digest(tmp_path / "a") != digest(tmp_path / "c")
    with pytest.raises(FileExistsError):
        simulate(cfg, tmp_path / "a")


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    root = tmp_path_factory.mktemp("sim")
    # seed 2: every case the tests below need happens (a silent link fault among them)
    summary = simulate(preset("rsc1", nodes=256, days=20, seed=2, telemetry_jobs=1), root / "src")
    con = warehouse.connect(root / "w.duckdb")
    ingest_directory(con, root / "src")
    build_jobs(con)
    joblogs.build_events(con)
    map_switch_ports(con)
    yield con, root / "src", summary
    con.close()


def one(con, query, params=None):
    return con.execute(query, params).fetchall()[0]


def test_only_the_deliberately_malformed_lines_are_rejected(cluster):
    con, src, _ = cluster
    truth = pl.read_csv(src / "truth" / "malformed_lines.csv")
    assert truth.height == 4
    rejects = con.sql("SELECT file, line_no FROM rejects").pl()
    got = {(f.split(str(src) + "/")[1], n) for f, n in rejects.iter_rows()}
    assert got == set(truth.select("file", "line_no").iter_rows())
    assert one(con, "SELECT count(*) FROM ingested_files WHERE status <> 'ok'")[0] == 0


def test_workload_and_outcome_shares_are_meta_like(cluster):
    con, _, summary = cluster
    n, one_gpu, sub_node = one(con, "SELECT count(*), avg((n_gpus = 1)::INT), avg((n_gpus < 8)::INT) FROM jobs")
    assert n > 5000 and one_gpu > 0.40 and sub_node > 0.90
    big_share = one(con, "SELECT sum(n_gpus * elapsed_s) FILTER (WHERE n_gpus >= 256) / sum(n_gpus * elapsed_s) FROM jobs")[0]
    assert big_share > 0.5
    # the end states goodput reads from sacct are the simulator's own (test_simulate_states.py holds
    # them to Meta's shares)
    ended = dict(con.execute("SELECT state, count(*) FROM jobs WHERE state NOT IN ('RUNNING', 'PENDING') GROUP BY state").fetchall())
    assert ended == {s: n for s, n in summary["states"].items() if s not in ("RUNNING", "PENDING")}


def test_scheduler_rules_hold(cluster):
    con, _, _ = cluster
    # preempted only after 2 hours of running; no instance outlives 7 days
    assert one(con, "SELECT min(elapsed_s) FROM jobs WHERE state = 'PREEMPTED'")[0] >= 7200
    assert one(con, "SELECT max(elapsed_s) FROM jobs")[0] <= 7 * 86400
    assert one(con, "SELECT count(*) FROM jobs WHERE state = 'TIMEOUT' AND elapsed_s < 3600")[0] == 0
    # requeued jobs keep their id; some users exclude nodes that failed them
    assert one(con, "SELECT count(DISTINCT job_id) FROM jobs WHERE instance > 0")[0] > 50
    assert one(con, "SELECT count(*) FROM jobs WHERE submit_line LIKE '%--exclude=%'")[0] > 0


def test_hardware_failure_rate_per_1000_node_days(cluster):
    con, _, summary = cluster
    failures = one(con, """
        WITH failed AS (SELECT end_time, unnest(nodes) AS host FROM jobs
                        WHERE state IN ('FAILED', 'NODE_FAIL', 'REQUEUED'))
        SELECT count(DISTINCT (e.host, date_trunc('hour', e.event_time)))
        FROM failed f JOIN node_events e ON e.host = f.host
         AND e.event_time BETWEEN f.end_time - INTERVAL 10 MINUTE AND f.end_time + INTERVAL 5 MINUTE
        WHERE (e.kind = 'xid' AND e.code IN ('48', '63', '64', '74', '79', '94', '95', '119', '120'))
           OR (e.kind = 'mem_ecc' AND e.code = 'UE') OR (e.kind = 'pcie_aer' AND e.code LIKE 'uncorrected%')
           OR (e.kind = 'ib_link' AND e.code IN ('down', 'module_error'))
           OR (e.kind = 'filesystem' AND e.code IN ('nfs', 'lustre')) OR (e.source = 'switch' AND e.kind = 'link_down')""")[0]
    node_days = one(con, "SELECT sum(n_gpus * elapsed_s) / 8 / 86400 FROM jobs WHERE start_time IS NOT NULL")[0]
    rate = failures / node_days * 1000
    assert 4.0 < rate < 10.0, (failures, node_days)


def test_truth_and_logs_agree(cluster):
    con, src, _ = cluster
    truth = pl.read_csv(src / "truth" / "job_instances.csv", infer_schema_length=0)
    hw = truth.filter(pl.col("cause").is_in(HARDWARE)).with_columns(pl.col("end").str.to_datetime())
    assert hw.height > 10
    con.register("hw_truth", hw)
    # every hardware failure shows on its host: in the kernel or switch log, or (a silent link fault)
    # in the job's own log, where the host reports errors towards its peers, or in the health check
    # that requeued the job before it crashed
    missing = one(con, """
        SELECT count(*) FROM hw_truth t WHERE NOT EXISTS (
            SELECT 1 FROM node_events e WHERE e.host = t.cause_host
              AND e.event_time BETWEEN t."end" - INTERVAL 10 MINUTE AND t."end" + INTERVAL 5 MINUTE
              AND (e.kind NOT IN ('other', 'health_check', 'node_state', 'nccl_warn', 'srun_exit', 'exception')
                   OR t.state = 'REQUEUED' AND e.kind = 'health_check' AND e.severity = 'critical'))""")[0]
    assert missing == 0
    silent = one(con, """SELECT count(*) FROM hw_truth t WHERE t.cause = 'infiniband_link' AND NOT EXISTS (
        SELECT 1 FROM node_events e WHERE e.host = t.cause_host AND e.source IN ('kernel', 'switch')
          AND e.event_time BETWEEN t."end" - INTERVAL 10 MINUTE AND t."end" + INTERVAL 5 MINUTE)""")[0]
    assert silent >= 1  # link faults only the job logs show
    decoys = pl.read_csv(src / "truth" / "decoys.csv", infer_schema_length=0).with_columns(
        pl.col("event_time").str.to_datetime(), pl.col("instance").cast(pl.Int32))
    assert decoys.height > 10 and set(decoys["why"]) == {"before_window", "outside_job"}
    con.register("decoys", decoys)
    inside = one(con, """
        SELECT count(*) FROM decoys d JOIN jobs j ON j.job_id = d.job_id AND j.instance = d.instance
        WHERE list_contains(j.nodes, d.host)
          AND d.event_time BETWEEN j.end_time - INTERVAL 10 MINUTE AND j.end_time + INTERVAL 5 MINUTE""")[0]
    assert inside == 0
    present = one(con, "SELECT count(*) FROM decoys d JOIN node_events e ON e.host = d.host AND e.event_time = d.event_time")[0]
    assert present >= decoys.height  # every decoy is really in the logs


def test_lemons_crash_loops_and_health_checks(cluster):
    con, src, _ = cluster
    nodes = pl.read_csv(src / "truth" / "nodes.csv")
    faults = pl.read_csv(src / "truth" / "faults.csv")
    per_node = nodes.join(faults.group_by("host").len(), on="host", how="left").with_columns(pl.col("len").fill_null(0))
    lemon_rate = per_node.filter(pl.col("is_lemon"))["len"].mean()
    assert 0 < nodes["is_lemon"].sum() <= 0.03 * nodes.height and lemon_rate > 3 * per_node.filter(~pl.col("is_lemon"))["len"].mean()
    # the check added halfway through reports from that day on, and only then
    first = one(con, "SELECT min(event_time) FROM node_events WHERE code = 'gpu_row_remap'")[0]
    assert first >= datetime(2024, 3, 11)
    assert one(con, "SELECT count(*) FROM node_state_periods WHERE reason LIKE 'healthcheck:%'")[0] > 0
    assert one(con, "SELECT count(*) FROM tickets")[0] > 0


def test_crash_loops_at_a_high_fault_rate(tmp_path):
    # faults spread over the fleet (mild lemons): crash loops, not lemons, are under test
    simulate(preset("rsc1", nodes=128, days=10, failure_rate=80.0, telemetry_jobs=0, lemon_multiplier=12.0), tmp_path)
    truth = pl.read_csv(tmp_path / "truth" / "job_instances.csv", infer_schema_length=0)
    loops = truth.filter(pl.col("cause").is_in(HARDWARE)).group_by("job_id", "cause_host").len()
    assert loops["len"].max() >= 3  # a requeued job that kept landing on its bad node
