"""Criteria on simulated weekly validation runs, judged against the simulator's truth."""
from datetime import datetime, timedelta

import numpy as np
import polars as pl
import pytest

from analysis import warehouse
from analysis.criteria import run as criteria_run
from analysis.criteria.learn import CriteriaConfig
from analysis.ingest.engine import ingest_directory
from analysis.simulate.benchmarks import COMPONENTS, write_benchmarks


def simulated(tmp_path, seed: int, n_hosts: int = 300, n_defective: int = 12, days: int = 63):
    rng = np.random.default_rng(seed)
    hosts = [f"gpu{i:04d}" for i in range(1, n_hosts + 1)]
    picked = rng.choice(n_hosts, size=n_defective, replace=False)
    defects = {hosts[int(i)]: COMPONENTS[k % len(COMPONENTS)] for k, i in enumerate(picked)}  # every component
    truth = write_benchmarks(tmp_path / "src", hosts, defects, datetime(2024, 3, 1), days, rng)
    con = warehouse.connect(tmp_path / "w.duckdb")
    ingest_directory(con, tmp_path / "src")
    return con, defects, truth


@pytest.mark.parametrize("seed", [2, 3])
def test_defective_nodes_found_and_margin_beats_the_baselines(tmp_path, seed):
    con, defects, truth = simulated(tmp_path, seed)
    result = criteria_run.run(con, CriteriaConfig(window_days=365))
    # node level: a defect that shows in most runs, against one-off outliers on healthy nodes
    flagged = set(result.nodes.filter(pl.col("defective"))["host"])
    hits = len(flagged & set(defects))
    precision, recall = hits / max(len(flagged), 1), hits / len(defects)
    assert precision >= 0.95 and recall >= 0.95, (precision, recall, sorted(flagged ^ set(defects)))
    # run level: every run where a defect showed fails that node
    failed = result.verdicts.group_by("run_id", "host").agg(fail=(pl.col("verdict") == "fail").any())
    shown = truth.filter("defective").join(failed, on=["run_id", "host"], how="left")
    assert shown["fail"].fill_null(False).mean() >= 0.95
    # Margin ratio between healthy and defective nodes (Anubis Fig. 9), on every benchmark with defects:
    # Algorithm 2's is at least IQR's and k-means' (they tie where they split the nodes alike), except
    # on bert, where the defects' effects form a ladder across alpha (CPU 3%, power caps 6-10%, GPUs
    # 15-25% slower) and a baseline that cuts elsewhere on it can find a wider gap (8 seeds: k-means in
    # 4, IQR in 1; the note quotes them)
    ev = result.per_benchmark.filter(pl.col("margin_alg2").is_not_null())
    assert ev.height >= 7
    behind = ev.filter((pl.col("margin_iqr") > pl.col("margin_alg2") + 1e-9)
                       | (pl.col("margin_kmeans") > pl.col("margin_alg2") + 1e-9))["benchmark"].to_list()
    assert behind in ([], ["model-benchmarks:bert"]), behind
    assert ev["margin_alg2"].min() > 0.5  # a clear gap between healthy and defective nodes everywhere
    # and every benchmark is repeatable: the export is not blocked
    assert criteria_run.noisy_benchmarks(result.per_benchmark, 0.95).height == 0
    con.close()


def test_verdicts_say_which_metric_and_missing_results_fail(tmp_path):
    con, defects, truth = simulated(tmp_path, 5, n_hosts=60, n_defective=4, days=21)
    # one node's latest run lost its ib-loopback results (the benchmark did not run)
    latest = sorted((tmp_path / "src" / "benchmarks").iterdir())[-1] / "results-summary.jsonl"
    lines = latest.read_text().splitlines()
    import json
    obj = json.loads(lines[0])
    host = obj["node"]
    lines[0] = json.dumps({k: v for k, v in obj.items() if not k.startswith("ib-loopback/")})
    latest.write_text("\n".join(lines) + "\n")
    ingest_directory(con, tmp_path / "src")
    result = criteria_run.run(con, CriteriaConfig(window_days=365))
    miss = result.verdicts.filter((pl.col("host") == host) & (pl.col("benchmark") == "ib-loopback")
                                  & (pl.col("run_id") == latest.parent.name))
    assert miss.height == 1 and miss["verdict"][0] == "fail"
    assert miss["reason"][0].startswith("missing: no result (the fleet reports it on 59 of 60 nodes)")
    bad = result.verdicts.filter(pl.col("verdict") == "fail").filter(pl.col("similarity").is_not_null())
    assert bad.height and bad["reason"].str.contains(r"^similarity 0\.\d+ under 0\.9\d*").all()
    # the tables are in the warehouse for ad-hoc SQL
    n = con.execute("SELECT count(*) FROM benchmark_verdicts WHERE verdict = 'fail'").fetchall()[0][0]
    assert n == result.verdicts.filter(pl.col("verdict") == "fail").height
    con.close()


def test_validation_failures_reach_the_blocklist_and_the_lemon_signals(tmp_path):
    """A node that failed the latest validation run is drained after its job; one that keeps failing is
    drained now; both carry cause `benchmark` and the failing metrics into blocklist.json."""
    import json

    import jsonschema

    from analysis.nodes import exports
    from analysis.nodes.lemons import build_features
    from analysis.derive.metrics import MetricsConfig
    from analysis.simulate.config import preset
    from analysis.simulate.run import simulate
    from analysis.derive.taxonomy import load
    from assets.pure_builds import build_all

    # seed 3: a lemon fails the latest validation run after failing earlier ones (the case under test)
    simulate(preset("small", nodes=48, days=42, seed=3, telemetry_jobs=0), tmp_path / "src")
    con = warehouse.connect(tmp_path / "w.duckdb")
    ingest_directory(con, tmp_path / "src")
    build_all(con, load(), MetricsConfig())
    result = criteria_run.run(con, CriteriaConfig())
    nodes = result.nodes
    as_of = (nodes["last_run_time"].max() + timedelta(days=1)).replace(hour=0, minute=0, second=0)
    actions = exports.build_node_actions(con, as_of)
    bench = actions.filter(pl.col("cause") == "benchmark")
    failed_latest = set(nodes.filter(pl.col("last_failed") & (pl.col("last_run_time") == nodes["last_run_time"].max()))
                        ["host"])
    assert failed_latest and set(bench["host"]) <= set(actions["host"])
    # every node that failed the latest run is held, by the benchmark or by something worse
    assert failed_latest <= set(actions.filter(pl.col("action").is_in(exports.DRAIN_ACTIONS))["host"])
    repeated = set(nodes.filter(pl.col("defective") & pl.col("last_failed"))["host"])
    assert repeated and repeated <= set(actions.filter(pl.col("action") == "drain_now")["host"])
    row = bench.row(0, named=True)
    assert row["benchmarks"] and all(b.startswith(nodes.filter(pl.col("host") == row["host"])["last_run"][0] + ": ")
                                     for b in row["benchmarks"])
    doc = exports.blocklist_json(actions, as_of, "test", exports.LadderConfig())
    jsonschema.validate(doc, json.loads(exports.SCHEMA.read_text()))
    entry = next(e for e in doc["entries"] if e["host"] == row["host"])
    assert entry["cause"] == "benchmark" and entry["evidence"]["benchmarks"] == row["benchmarks"]
    # and failed runs are a lemon signal, counted only before as_of
    first_run = result.verdicts["run_time"].min()
    features = build_features(con, [first_run, as_of])
    now = features.filter(pl.col("as_of") == as_of)
    for host in repeated:
        assert now.filter(pl.col("host") == host)["benchmark_failures"][0] >= 3
    assert features.filter(pl.col("as_of") == first_run)["benchmark_failures"].sum() == 0  # a run at as_of is future
    con.close()
