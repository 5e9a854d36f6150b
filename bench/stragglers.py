"""Stragglers found against the simulator's truth (issue 32): precision, recall, the error of the cost and the
node-or-job verdict, on seeds the detector was not tuned on (tuned on 1-4; 11-13 seen once), beside Minder, MD
and Aegis on the same jobs.

    python bench/stragglers.py [--seeds 21,22,23] [--share 1.0] [--telemetry-only] [--no-baselines]
                               [--workdir /tmp/goodput-bench-stragglers]

Each seed: `small` preset with `straggler_jobs=SHARE` (per-rank step lines in the job logs, iteration_time_seconds
telemetry, truth/stragglers.csv), ingested, the derived tables built, then straggler_episodes compared with the
truth (``--telemetry-only``: the step lines dropped first, so every job is measured from its telemetry).
A found episode matches a true one on the same job instance and host when their spans overlap; precision =
matched found / found, recall = matched true / true; the cost error is |found - true| / true, each summed per
worker and run over its matched episodes (a true episode found in pieces compares as their sum). Verdict:
right / decided (node or job), with the share decided and right / all (undetermined counted wrong) beside it.
Job-wide slowdowns in truth/job_slowdowns.csv are nobody's: a found episode there is a false alarm like any.
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

from analysis import sql, warehouse  # noqa: E402
from analysis.derive import metrics, stragglers  # noqa: E402
from analysis.derive.taxonomy import load  # noqa: E402
from analysis.ingest.engine import ingest_directory  # noqa: E402
from analysis.simulate.config import preset  # noqa: E402
from analysis.simulate.run import simulate  # noqa: E402
from analysis.telemetry import run as telemetry_run  # noqa: E402
from assets.pure_builds import build_all  # noqa: E402


def truth_of(src: Path) -> pl.DataFrame:
    t = pl.read_csv(src / "truth" / "stragglers.csv", schema_overrides={"job_id": pl.Utf8, "ranks": pl.Utf8})
    return t.with_columns(pl.col("start").str.to_datetime(time_zone="UTC").dt.replace_time_zone(None),
                          pl.col("end").str.to_datetime(time_zone="UTC").dt.replace_time_zone(None))


def compare(found: pl.DataFrame, truth: pl.DataFrame) -> dict:
    """Found against true episodes: matched on the same job instance and host with overlapping spans."""
    f, t = found.with_row_index("f"), truth.with_row_index("t")
    pairs = (f.join(t, on=["job_id", "instance", "host"], suffix="_true")
             .filter((pl.col("start_time") < pl.col("end")) & (pl.col("end_time") > pl.col("start"))))
    # cost per worker and run: a true episode found in pieces, or two true ones on one host (a skewed rank on
    # a slow node) found as one, compare as sums
    worker = ["job_id", "instance", "host"]
    cost = (pairs.group_by(worker).agg(pl.col("f").unique(), pl.col("t").unique())
            .with_columns(found=pl.col("f").list.eval(pl.element().replace_strict(f["f"], f["cost_seconds"])).list.sum(),
                          true=pl.col("t").list.eval(pl.element().replace_strict(t["t"], t["cost_seconds"])).list.sum()))
    # the verdict per found episode against the origin of the true ones it matched; left out when those
    # disagree (two true episodes of different origins on one host at once)
    per_found = pairs.group_by("f").agg(pl.col("origin").first(), pl.col("origin_true").unique())
    scored = per_found.filter(pl.col("origin_true").list.len() == 1).with_columns(pl.col("origin_true").list.first())
    decided = scored.filter(pl.col("origin").is_in(["node", "job"]))
    return {"found": found.height, "true": truth.height, "matched_found": pairs["f"].n_unique(),
            "matched_true": pairs["t"].n_unique(), "cost_true": float(cost["true"].sum() or 0.0),
            "cost_abs_err": float((cost["found"] - cost["true"]).abs().sum() or 0.0),
            "scored": scored.height, "decided": decided.height,
            "decided_right": decided.filter(pl.col("origin") == pl.col("origin_true")).height,
            "ambiguous": per_found.height - scored.height}


def beside_detectors(con, found: pl.DataFrame, truth: pl.DataFrame, work: Path) -> pl.DataFrame:
    """Minder, MD and Aegis (analysis.telemetry: one faulty machine per job from its telemetry, here the one
    metric iteration_time_seconds) beside this detector on the same jobs: trained on the jobs that ended
    before the median end, judged on those that started after it. Per judged job instance each method names
    its first alert's host (ours: the costliest episode's); right when a true straggler of that instance ran
    there. -> method, named, right, instances with a straggler, false alarms (named in an instance without)."""
    covered = sql.query(con, "telemetry/jobs", {"min_samples": 12})
    split = covered["end_time"].sort()[covered.height // 2]
    result = telemetry_run.run(con, model_dir=work / "models", split=split)
    judged = con.sql("SELECT job_id, instance FROM jobs WHERE start_time >= ?", params=[split]).pl().filter(
        pl.col("job_id").is_in(pl.Series([str(j) for j in result.judged]).implode()))
    judged = judged.with_columns(pl.col("instance").cast(pl.Int64))
    named = (con.sql("SELECT * FROM machine_alerts").pl().filter(pl.col("method") != "missing_data")
             .sort("confirmed_at", "metric_rank").group_by("job_id", "instance", "method", maintain_order=True)
             .first().select("job_id", pl.col("instance").cast(pl.Int64), "method", "host"))
    ours = (found.sort("cost_seconds", descending=True).group_by("job_id", "instance", maintain_order=True).first()
            .select("job_id", "instance", pl.lit("stragglers").alias("method"), "host"))
    named = pl.concat([named, ours]).join(judged, on=["job_id", "instance"])
    slow = truth.select("job_id", "instance", "host").unique().join(judged, on=["job_id", "instance"])
    right = named.join(slow, on=["job_id", "instance", "host"], how="semi")
    false = named.join(slow.select("job_id", "instance").unique(), on=["job_id", "instance"], how="anti")
    methods = pl.DataFrame({"method": ["stragglers", "minder", "md", "aegis"]})
    count = lambda df, name: df.group_by("method").agg(pl.len().alias(name))  # noqa: E731
    return (methods.join(count(named, "named"), on="method", how="left").join(count(right, "right"), on="method", how="left")
            .join(count(false, "false_alarms"), on="method", how="left").fill_null(0)
            .with_columns(with_straggler=pl.lit(slow.select("job_id", "instance").unique().height),
                          judged=pl.lit(judged.height)))


def one_seed(seed: int, share: float, work: Path, telemetry_only: bool, baselines: bool) -> dict:
    src, db = work / f"seed{seed}" / "src", work / f"seed{seed}" / "w.duckdb"
    if src.exists():
        shutil.rmtree(src.parent)
    t0 = time.perf_counter()
    simulate(preset("small", seed=seed, straggler_jobs=share), src)
    con = warehouse.connect(db)
    try:
        ingest_directory(con, src)
        build_all(con, load(), metrics.MetricsConfig())
        if telemetry_only:
            con.execute("UPDATE job_log_lines SET step_seconds = NULL")
        stragglers.build(con)
        found = con.sql("SELECT * FROM straggler_episodes").pl()
        truth = truth_of(src)
        out = compare(found, truth)
        out.update(seed=seed, seconds=time.perf_counter() - t0)
        out["beside"] = beside_detectors(con, found, truth, work / f"seed{seed}") if baselines else None
    finally:
        con.close()
    return out


def _line(name, r: dict, seconds: str = "") -> str:
    div = lambda a, b: a / b if b else float("nan")  # noqa: E731
    return (f"{name:>5} {r['found']:>6} {r['true']:>5} {div(r['matched_found'], r['found']):>9.2f} "
            f"{div(r['matched_true'], r['true']):>7.2f} {div(r['cost_abs_err'], r['cost_true']):>8.2f} "
            f"{div(r['decided_right'], r['decided']):>8.2f} {div(r['decided'], r['scored']):>8.2f} "
            f"{div(r['decided_right'], r['scored']):>8.2f} {seconds:>6}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--seeds", default="21,22,23")
    ap.add_argument("--share", type=float, default=1.0)
    ap.add_argument("--telemetry-only", action="store_true", help="drop the job logs' step lines: telemetry only")
    ap.add_argument("--workdir", type=Path, default=Path("/tmp/goodput-bench-stragglers"))
    ap.add_argument("--no-baselines", action="store_true", help="skip Minder, MD and Aegis (their training)")
    args = ap.parse_args()
    rows = [one_seed(int(s), args.share, args.workdir, args.telemetry_only, not args.no_baselines)
            for s in args.seeds.split(",")]
    print(f"{'seed':>5} {'found':>6} {'true':>5} {'precision':>9} {'recall':>7} {'cost err':>8} {'verdict':>8} "
          f"{'decided':>8} {'v(all)':>8} {'s':>6}")
    for r in rows:
        print(_line(str(r["seed"]), r, f"{r['seconds']:.1f}"))
    print(_line("all", {k: sum(r[k] for r in rows) for k in rows[0] if k not in ("seed", "beside")}))
    amb = sum(r["ambiguous"] for r in rows)
    print(f"verdict: right / decided (node or job); decided: share of the matched episodes given a verdict; "
          f"v(all): right / matched, undetermined counted wrong; {amb} found episodes left out of the verdict "
          f"(two true episodes of different origins on one host at once)")
    beside = [r["beside"] for r in rows if r["beside"] is not None]
    if beside:
        t = (pl.concat(beside).group_by("method", maintain_order=True).sum()
             .with_columns(precision=pl.col("right") / pl.col("named"), recall=pl.col("right") / pl.col("with_straggler")))
        print("\nbeside the telemetry detectors, per judged job instance (the host each names first; ours: the costliest "
              "episode's), on the jobs that started after each seed's median end:")
        with pl.Config(tbl_rows=10, tbl_width_chars=160, tbl_hide_dataframe_shape=True, float_precision=2):
            print(t)


if __name__ == "__main__":
    main()

