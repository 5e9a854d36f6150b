"""Minder and the methods beside it on whole simulated clusters, against truth/telemetry_faults.csv.

    python bench/detect_eval.py [--seeds 1 2 3] [--nodes 256] [--days 45] [--jobs 12]

Per seed: simulate rsc1 with --jobs fault-ended jobs and as many completed ones carrying telemetry,
ingest, build the derived tables, run the detection (models trained on the completed jobs), and
score every method's first alert per job against the truth; then the pooled table over all seeds.
"""
from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

import polars as pl

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from analysis import warehouse  # noqa: E402
from analysis.chain import build_all  # noqa: E402
from analysis.ingest import ingest_directory  # noqa: E402
from analysis.metrics import MetricsConfig  # noqa: E402
from analysis.simulate.config import preset  # noqa: E402
from analysis.simulate.run import simulate  # noqa: E402
from analysis.taxonomy import load  # noqa: E402
from analysis.telemetry import evaluate, run as telemetry_run  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--seeds", type=int, nargs="+", default=[1, 2, 3])
    ap.add_argument("--nodes", type=int, default=256)
    ap.add_argument("--days", type=int, default=45)
    ap.add_argument("--jobs", type=int, default=12)
    args = ap.parse_args()
    alerts, truths, judged = [], [], []
    for seed in args.seeds:
        with tempfile.TemporaryDirectory() as tmp:
            tmp = Path(tmp)
            t0 = time.perf_counter()
            simulate(preset("rsc1", nodes=args.nodes, days=args.days, seed=seed, telemetry_jobs=args.jobs,
                            telemetry_healthy_jobs=args.jobs), tmp / "src")
            con = warehouse.connect(tmp / "w.duckdb")
            ingest_directory(con, tmp / "src")
            build_all(con, load(), MetricsConfig())
            t1 = time.perf_counter()
            result = telemetry_run.run(con, model_dir=tmp / "models")
            t2 = time.perf_counter()
            truth = pl.read_csv(tmp / "src/truth/telemetry_faults.csv", schema_overrides={"job_id": pl.Utf8},
                                try_parse_dates=True)
            ev = telemetry_run.evaluate_against_truth(con, truth)
            jobs = con.sql("SELECT DISTINCT job_id FROM telemetry_jobs").pl()["job_id"].cast(pl.Utf8)
            print(f"seed {seed}: {jobs.len()} jobs ({truth.filter(pl.col('kind') == 'fault').height} faulty), "
                  f"trained on {result.trained_on}; simulate+ingest+build {t1 - t0:.0f} s, detection {t2 - t1:.0f} s")
            print("  " + "  ".join(f"{r['method']} {r['f1']:.3f}" for r in ev.iter_rows(named=True)))
            tag = pl.lit(f"s{seed}-")
            alerts.append(con.sql("SELECT * FROM machine_alerts").pl().with_columns(job_id=tag + pl.col("job_id")))
            truths.append(truth.with_columns(job_id=tag + pl.col("job_id")))
            judged += [f"s{seed}-{j}" for j in jobs.to_list()]
            con.close()
    pooled = evaluate.evaluate(pl.concat(alerts), pl.concat(truths), judged)
    pl.Config.set_tbl_width_chars(200)
    print(pooled)


if __name__ == "__main__":
    main()
