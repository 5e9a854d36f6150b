"""Models on a cadence, end to end: train once, then the nightly only scores what is new.

    python bench/cadence.py [--nodes 256] [--days 14] [--jobs 4] [--hold 4] [--workdir /tmp/goodput-cadence]

Simulates rsc1 with --jobs jobs a fault ended and three times as many completed ones carrying
telemetry (or reuses WORKDIR/src), holds the --hold latest telemetry files back, ingests and builds
the derived tables, then times (CPU seconds: the cost on a shared machine):

  1. the telemetry step with no saved detector: it trains (training cost) and scores every covered job;
  2. the held-back files arrive (ingested as the nightly would): the step loads the saved detector and
     scores only the new jobs; scoring's CPU-s per 1,000 machines x 15 minutes of telemetry scored
     (selecting the new jobs, reading their telemetry, frames, every method, storing);
  3. the step again with nothing new: what finding that out costs;
  4. the node models (lemon classifier on the simulator's truth as labels, Cox-Time and baselines):
     trained once, then loaded and only scoring.
"""
from __future__ import annotations

import argparse
import shutil
import sys
from pathlib import Path

import polars as pl

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from analysis import warehouse  # noqa: E402
from analysis.derive.taxonomy import load  # noqa: E402
from analysis.ingest.engine import ingest_directory  # noqa: E402
from analysis.nodes.cadence import Cadence  # noqa: E402
from analysis.nodes.node_models import ModelsConfig, run_models  # noqa: E402
from analysis.simulate.config import preset  # noqa: E402
from analysis.simulate.run import simulate  # noqa: E402
from analysis.telemetry import run as telemetry_run  # noqa: E402
from assets.pure_builds import build_all  # noqa: E402
from timing import cpu, timed  # noqa: E402  (bench/ is sys.path[0] when run as a script)


def step(label: str, con, db: Path):
    result, spent = cpu(lambda: timed(label, lambda: telemetry_run.run(
        con, model_dir=db.parent / "models", lookback_days=14.0, cadence=Cadence(scope=db.name))))
    m = result.model
    units = result.machine_hours / 250  # 1,000 machines x 15 minutes
    print(f"  {'trained' if m.trained else 'loaded'} ({m.reason}); {result.jobs} job(s) scored, "
          f"{result.machine_hours:,.1f} machine-hours; CPU-s: "
          + ", ".join(f"{k} {v:.1f}" for k, v in m.cpu_s.items()) + f", whole step {spent:.1f}")
    if units:
        print(f"  scoring: {m.cpu_s['score'] / units:.2f} CPU-s per 1,000 machines x 15 min "
              f"(whole step without training: {(spent - m.cpu_s.get('train', 0)) / units:.2f})")
    return result


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--nodes", type=int, default=256)
    ap.add_argument("--days", type=int, default=14)
    ap.add_argument("--jobs", type=int, default=4, help="telemetry jobs a fault ended (3x as many completed)")
    ap.add_argument("--hold", type=int, default=4, help="telemetry files held back for the second run")
    ap.add_argument("--workdir", type=Path, default=Path("/tmp/goodput-cadence"))
    args = ap.parse_args()
    src, db, held = args.workdir / "src", args.workdir / "w.duckdb", args.workdir / "held"
    if not src.exists():
        timed(f"simulate rsc1 {args.nodes}x{args.days}", lambda: simulate(
            preset("rsc1", nodes=args.nodes, days=args.days, seed=1, telemetry_jobs=args.jobs), src))
    for path in (db, db.parent / "models", held):  # every measurement from the start
        shutil.rmtree(path) if path.is_dir() else path.unlink(missing_ok=True)
    files = sorted((src / "telemetry").glob("*.parquet"), key=lambda f: pl.scan_parquet(f).select(
        pl.col("time").min()).collect().item())
    held.mkdir(parents=True)
    for f in files[-args.hold:]:
        f.rename(held / f.name)
    try:
        con = warehouse.connect(db)
        timed("ingest", lambda: ingest_directory(con, src))
        timed("derived tables", lambda: build_all(con, load()))
    finally:
        for f in held.iterdir():
            f.rename(src / "telemetry" / f.name)
    step("1. telemetry: first run", con, db)
    timed(f"ingest {args.hold} new telemetry file(s)", lambda: ingest_directory(con, src))
    step("2. telemetry: nightly, new jobs", con, db)
    step("3. telemetry: nothing new", con, db)
    truth = pl.read_csv(src / "truth" / "nodes.csv")
    labels = args.workdir / "labels.csv"
    labels.write_text(truth.select("host", "is_lemon", confirmed_at=pl.lit(""), component="defect").write_csv())
    cfg = ModelsConfig(labels_path=labels, model_dir=db.parent / "models", cadence=Cadence(scope=db.name))
    for label in ("4. node models: first run", "   node models: next run"):
        result = timed(label, lambda: run_models(con, cfg))
        for name, m in (("lemon classifier", result.lemon.model), ("incident models", result.incident)):
            if m is not None:
                print(f"  {name}: {'trained' if m.trained else 'loaded'} ({m.reason}); CPU-s "
                      + ", ".join(f"{k} {v:.1f}" for k, v in m.cpu_s.items()))
    con.close()


if __name__ == "__main__":
    main()
