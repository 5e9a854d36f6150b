"""Benchmark criteria at scale: learning and checking time and peak memory.

    python bench/criteria.py [--nodes 2000] [--runs 52] [--workdir /tmp/goodput-criteria]

Writes WORKDIR/src/benchmarks/ with the simulator's weekly SuperBench runs
(2% of nodes defective, every component kind), ingests them once, then times
`goodput criteria`'s steps over all the runs (a window of a year): building the
samples (in DuckDB), learning the criteria (Algorithm 2 and the noise
check), checking every node in every run, the node-level call, repeatability
and the IQR / k-means evaluation, and storing the tables. Peak RSS is the
process's maximum, the ingest included.
"""
from __future__ import annotations

import argparse
import sys
import time
from datetime import datetime
from pathlib import Path

import numpy as np
import polars as pl

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from analysis import sql, warehouse  # noqa: E402
from analysis.criteria import catalog, evaluation, learn, samples, verdicts  # noqa: E402
from analysis.criteria import run as criteria_run  # noqa: E402
from analysis.criteria.learn import CriteriaConfig  # noqa: E402
from analysis.ingest.engine import ingest_directory  # noqa: E402
from analysis.simulate.benchmarks import COMPONENTS, write_benchmarks  # noqa: E402
from timing import timed  # noqa: E402  (bench/ is sys.path[0] when run as a script)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--nodes", type=int, default=2000)
    ap.add_argument("--runs", type=int, default=52)
    ap.add_argument("--workdir", type=Path, default=Path("/tmp/goodput-criteria"))
    args = ap.parse_args()
    src, db = args.workdir / "src", args.workdir / "w.duckdb"
    hosts = [f"gpu{i:05d}" for i in range(1, args.nodes + 1)]
    rng = np.random.default_rng(1)
    bad = rng.choice(args.nodes, size=max(len(COMPONENTS), args.nodes // 50), replace=False)
    defects = {hosts[int(i)]: COMPONENTS[k % len(COMPONENTS)] for k, i in enumerate(bad)}
    if not src.exists():
        timed(f"simulate {args.nodes} nodes x {args.runs} runs", lambda: write_benchmarks(
            src, hosts, defects, datetime(2024, 1, 1), 7 * args.runs, rng))
    con = warehouse.connect(db)
    timed("ingest (once)", lambda: ingest_directory(con, src))
    cfg = CriteriaConfig(window_days=7 * args.runs + 7)
    t0 = time.perf_counter()
    values = con.execute("SELECT count(*) FROM benchmark_results").fetchall()[0][0]
    smp = timed("build samples (DuckDB)", lambda: samples.with_groups(criteria_run.load_samples(con, cfg)))
    print(f"  {values:,} values -> {smp.height:,} samples, {smp['run_id'].n_unique()} runs")
    names = smp.select(pl.format("{}/{}", "benchmark", "metric")).to_series().unique().to_list()
    crit = timed("learn criteria (Algorithm 2)", lambda: learn.learn(smp, catalog.classify(names, catalog.load()), cfg))
    crit = crit.with_columns(version=pl.lit("bench"), trained_from=pl.lit(smp["run_time"].min()),
                             trained_to=pl.lit(smp["run_time"].max()))
    judged = timed("check every node in every run", lambda: verdicts.check(smp, crit, cfg))
    print(f"  {judged.height:,} verdicts, {judged.filter(pl.col('verdict') == 'fail').height:,} failing")
    nodes = timed("node-level call", lambda: verdicts.node_status(judged, cfg))
    learned = time.perf_counter() - t0
    crit = timed("repeatability among healthy nodes", lambda: evaluation.healthy_repeatability(smp, crit, judged))
    _, per_bench = timed("evaluation vs IQR and k-means", lambda: evaluation.evaluate(smp, crit))
    timed("store tables", lambda: sql.run_staged(
        con, {"staged_criteria": crit, "staged_verdicts": judged.with_columns(version=pl.lit("bench")),
              "staged_nodes": nodes, "staged_evaluation": per_bench.with_columns(version=pl.lit("bench"))},
        [("schema/benchmark_criteria", None), ("schema/benchmark_verdicts", None), ("schema/criteria_evaluation", None),
         ("criteria/store_benchmark_criteria", {"version": "bench"})]))
    total = time.perf_counter() - t0
    flagged = set(nodes.filter(pl.col("defective"))["host"])
    hits = len(flagged & set(defects))
    print(f"learning + checking: {learned:.1f} s; everything (with evaluation and storing): {total:.1f} s")
    print(f"node level: {len(defects)} defective, {len(flagged)} flagged, precision "
          f"{hits / max(len(flagged), 1):.3f}, recall {hits / len(defects):.3f}")
    print(per_bench.select("benchmark", "repeatability", "margin_alg2", "margin_iqr", "margin_kmeans"))
    con.close()


if __name__ == "__main__":
    main()
