"""Minder and the methods beside it on whole simulated clusters, against truth/telemetry_faults.csv.

    python bench/detect_eval.py [--seeds 1 2 3] [--nodes 256] [--days 45] [--jobs 10] [--healthy 20]

Per seed: simulate rsc1 with --jobs jobs a fault ended, as many completed jobs in which one machine
ran slow (fail-slow: nothing failed, nothing labels them) and --healthy completed ones, all carrying
telemetry; ingest, build the derived tables; split the covered jobs in time at the median end: the
models train on the completed jobs that ended before the split (slow machines included, as the
pipeline would), and every method's first alert per job is scored against the truth on the jobs
that started after it. Then the pooled table over all seeds.
"""
from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

import polars as pl

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from analysis import sql, warehouse  # noqa: E402
from analysis.derive.metrics import MetricsConfig  # noqa: E402
from analysis.derive.taxonomy import load  # noqa: E402
from analysis.ingest.engine import ingest_directory  # noqa: E402
from analysis.simulate.config import preset  # noqa: E402
from analysis.simulate.run import simulate  # noqa: E402
from analysis.telemetry import evaluate, run as telemetry_run  # noqa: E402
from assets.pure_builds import build_all  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--seeds", type=int, nargs="+", default=[1, 2, 3])
    ap.add_argument("--nodes", type=int, default=256)
    ap.add_argument("--days", type=int, default=45)
    ap.add_argument("--jobs", type=int, default=10, help="jobs a fault ended (as many fail-slow completed ones)")
    ap.add_argument("--healthy", type=int, default=20, help="completed jobs without a faulty machine")
    args = ap.parse_args()
    alerts, truths, judged = [], [], []
    for seed in args.seeds:
        with tempfile.TemporaryDirectory() as tmp:
            tmp = Path(tmp)
            t0 = time.perf_counter()
            simulate(preset("rsc1", nodes=args.nodes, days=args.days, seed=seed, telemetry_jobs=args.jobs,
                            telemetry_slow_jobs=args.jobs, telemetry_healthy_jobs=args.jobs + args.healthy),
                     tmp / "src")
            con = warehouse.connect(tmp / "w.duckdb")
            ingest_directory(con, tmp / "src")
            build_all(con, load(), MetricsConfig())
            t1 = time.perf_counter()
            covered = sql.query(con, "telemetry/jobs", {"min_samples": 12})
            split = covered["end_time"].sort()[covered.height // 2]
            result = telemetry_run.run(con, model_dir=tmp / "models", split=split)
            t2 = time.perf_counter()
            truth = pl.read_csv(tmp / "src/truth/telemetry_faults.csv", schema_overrides={"job_id": pl.Utf8},
                                try_parse_dates=True)
            jobs = [str(j) for j in result.judged]
            faulty = truth.filter((pl.col("kind") == "fault") & pl.col("job_id").is_in(jobs))
            slow = faulty.filter(pl.col("fault_type").str.starts_with("slow_")).height
            print(f"seed {seed}: {covered.height} jobs covered; trained on {result.trained_on} completed before "
                  f"{split} ({len(result.suspects)} machines left out as suspects), judged {len(jobs)} after it "
                  f"({faulty.height} with a faulty machine, {slow} of them fail-slow in a completed job); "
                  f"simulate+ingest+build {t1 - t0:.0f} s, detection {t2 - t1:.0f} s")
            tag = pl.lit(f"s{seed}-")
            stored = con.sql("SELECT * FROM machine_alerts").pl().with_columns(job_id=tag + pl.col("job_id"))
            ev = evaluate.evaluate(stored, truth.with_columns(job_id=tag + pl.col("job_id")),
                                   [f"s{seed}-{j}" for j in jobs])
            print("  " + "  ".join(f"{r['method']} {r['f1']:.3f}" for r in ev.iter_rows(named=True)))
            alerts.append(stored)
            truths.append(truth.with_columns(job_id=tag + pl.col("job_id")))
            judged += [f"s{seed}-{j}" for j in jobs]
            con.close()
    pooled = evaluate.evaluate(pl.concat(alerts), pl.concat(truths), judged)
    pl.Config.set_tbl_width_chars(200)
    pl.Config.set_tbl_cols(12)
    print(pooled)


if __name__ == "__main__":
    main()
