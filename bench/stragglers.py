"""Stragglers found against the simulator's truth (issue 32): precision, recall, the error of the cost and the
node-or-job verdict, on seeds the detector was not tuned on.

    python bench/stragglers.py [--seeds 11,12,13] [--share 0.5] [--workdir /tmp/goodput-bench-stragglers]

Each seed: `small` preset with `straggler_jobs=SHARE` (per-rank step lines in the job logs, iteration_time_seconds
telemetry, truth/stragglers.csv), ingested, the derived steps built, then straggler_episodes compared with the truth.
A found episode matches a true one on the same job instance and host when their spans overlap; precision = matched
found / found, recall = matched true / true; the cost error is |found - true| / true summed over matched pairs;
the verdict is right when origin equals the truth's (undetermined counts as wrong). Job-wide slowdowns in
truth/job_slowdowns.csv are nobody's: a found episode inside one with no true episode is a false alarm like any.
"""
from __future__ import annotations

import argparse
import shutil
import sys
import time
from pathlib import Path

import polars as pl

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from analysis import warehouse  # noqa: E402
from analysis.derive import metrics, stragglers  # noqa: E402
from analysis.derive.taxonomy import load  # noqa: E402
from analysis.ingest.engine import ingest_directory  # noqa: E402
from analysis.simulate.config import preset  # noqa: E402
from analysis.simulate.run import simulate  # noqa: E402
from assets.derive import build_all  # noqa: E402


def truth_of(src: Path) -> pl.DataFrame:
    t = pl.read_csv(src / "truth" / "stragglers.csv", schema_overrides={"job_id": pl.Utf8, "ranks": pl.Utf8})
    return t.with_columns(pl.col("start").str.to_datetime(time_zone="UTC").dt.replace_time_zone(None),
                          pl.col("end").str.to_datetime(time_zone="UTC").dt.replace_time_zone(None))


def compare(found: pl.DataFrame, truth: pl.DataFrame) -> dict:
    pairs = (found.with_row_index("f").join(truth.with_row_index("t"), on=["job_id", "instance", "host"])
             .filter((pl.col("start_time") < pl.col("end")) & (pl.col("end_time") > pl.col("start"))))
    best = pairs.sort("f").unique("t", keep="first").unique("f", keep="first")
    verdict = best.filter(pl.col("origin") == pl.col("origin_right")) if "origin_right" in best.columns else best.head(0)
    cost_true = best["cost_seconds_right"].sum() if best.height else 0.0
    return {"found": found.height, "true": truth.height, "matched_found": pairs["f"].n_unique(),
            "matched_true": pairs["t"].n_unique(), "cost_found": best["cost_seconds"].sum() if best.height else 0.0,
            "cost_true": cost_true, "cost_abs_err": (best["cost_seconds"] - best["cost_seconds_right"]).abs().sum()
            if best.height else 0.0, "verdict_right": verdict.height, "verdict_of": best.height}


def one_seed(seed: int, share: float, work: Path) -> dict:
    src, db = work / f"seed{seed}" / "src", work / f"seed{seed}" / "w.duckdb"
    if src.exists():
        shutil.rmtree(src.parent)
    t0 = time.perf_counter()
    simulate(preset("small", seed=seed, straggler_jobs=share), src)
    con = warehouse.connect(db)
    try:
        ingest_directory(con, src)
        build_all(con, load(), metrics.MetricsConfig())
        stragglers.build(con)
        found = con.sql("SELECT * FROM straggler_episodes").pl()
    finally:
        con.close()
    out = compare(found, truth_of(src))
    out.update(seed=seed, seconds=time.perf_counter() - t0)
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--seeds", default="11,12,13")
    ap.add_argument("--share", type=float, default=0.5)
    ap.add_argument("--workdir", type=Path, default=Path("/tmp/goodput-bench-stragglers"))
    args = ap.parse_args()
    rows = [one_seed(int(s), args.share, args.workdir) for s in args.seeds.split(",")]
    print(f"{'seed':>5} {'found':>6} {'true':>5} {'precision':>9} {'recall':>7} {'cost err':>8} {'verdict':>8} {'s':>6}")
    for r in rows:
        p = r["matched_found"] / r["found"] if r["found"] else float("nan")
        rc = r["matched_true"] / r["true"] if r["true"] else float("nan")
        err = r["cost_abs_err"] / r["cost_true"] if r["cost_true"] else float("nan")
        v = r["verdict_right"] / r["verdict_of"] if r["verdict_of"] else float("nan")
        print(f"{r['seed']:>5} {r['found']:>6} {r['true']:>5} {p:>9.2f} {rc:>7.2f} {err:>8.2f} {v:>8.2f} {r['seconds']:>6.1f}")
    tot = {k: sum(r[k] for r in rows) for k in rows[0] if k != "seed"}
    print(f"{'all':>5} {tot['found']:>6} {tot['true']:>5} {tot['matched_found'] / max(tot['found'], 1):>9.2f} "
          f"{tot['matched_true'] / max(tot['true'], 1):>7.2f} {tot['cost_abs_err'] / max(tot['cost_true'], 1e-9):>8.2f} "
          f"{tot['verdict_right'] / max(tot['verdict_of'], 1):>8.2f}")


if __name__ == "__main__":
    main()
