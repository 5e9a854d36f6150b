"""Node models at scale: feature building, training and scoring time and peak memory.

    python bench/models.py [--nodes 2000] [--days 90] [--workdir /tmp/goodput-models]

Simulates rsc1 (or reuses WORKDIR/src), ingests and builds the derived tables
once, then times each step of `goodput models` on that warehouse: lemon
features over weekly snapshots, the lemon classifier (trained on the
simulator's truth as labels), incident samples, the incident evaluation
(Cox-Time and three baselines on a time split), node_risk (fit on all history,
score every node) and node_actions. Peak RSS is the process's maximum.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

import polars as pl

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from analysis import warehouse  # noqa: E402
from analysis.derive.taxonomy import load  # noqa: E402
from analysis.ingest.engine import ingest_directory  # noqa: E402
from analysis.nodes import exports
from analysis.nodes import incident_model
from analysis.nodes import lemon_scoring
from analysis.nodes import lemons
from analysis.nodes import survival
from analysis.simulate.config import preset  # noqa: E402
from analysis.simulate.run import simulate  # noqa: E402
from assets.pure_builds import build_all  # noqa: E402
from timing import timed  # noqa: E402  (bench/ is sys.path[0] when run as a script)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--nodes", type=int, default=2000)
    ap.add_argument("--days", type=int, default=90)
    ap.add_argument("--workdir", type=Path, default=Path("/tmp/goodput-models"))
    args = ap.parse_args()
    src, db = args.workdir / "src", args.workdir / "w.duckdb"
    if not src.exists():
        timed(f"simulate rsc1 {args.nodes}x{args.days}", lambda: simulate(
            preset("rsc1", nodes=args.nodes, days=args.days, seed=1, telemetry_jobs=0), src))
    if not db.exists():
        con = warehouse.connect(db)
        timed("ingest", lambda: ingest_directory(con, src))
        timed("derived tables", lambda: build_all(con, load()))
    else:
        con = warehouse.connect(db)
    truth = pl.read_csv(src / "truth" / "nodes.csv")
    labels = truth.select("host", "is_lemon", confirmed_at=pl.lit(None, pl.Datetime("us")), component="defect")
    as_of, start = lemon_scoring.default_as_of(con), incident_model.first_day(con)
    cfg = lemons.LemonConfig()
    snaps = lemons.snapshots(start, as_of, cfg.snapshot_days, cfg.window_days)
    features = timed(f"lemon features ({len(snaps)} snapshots)", lambda: lemons.build_features(con, snaps))
    rows = lemons.training_rows(features.filter(pl.col("as_of") < as_of), labels, as_of)
    model = timed(f"lemon classifier train ({rows.height:,} rows)", lambda: lemons.train(rows, cfg.window_days))
    current = features.filter(pl.col("as_of") == as_of)
    timed(f"lemon classifier score ({current.height:,} nodes)", lambda: lemons.predict(model, current))
    samples = timed("incident samples", lambda: incident_model.build_samples(con, as_of))
    print(f"  {samples.height:,} samples, {int(samples['event'].sum()):,} followed by an incident")
    evaluation = timed("incident evaluation (4 models)", lambda: incident_model.evaluate(samples, start, as_of))
    train = samples.filter((pl.col("t") < as_of) & (pl.col("duration_h") > 0))
    now = samples.filter(pl.col("t") == as_of)
    cox = timed(f"cox_time train ({train.height:,} samples)", lambda: survival.CoxTime().fit(train))
    timed(f"cox_time score ({now.height:,} nodes)", lambda: cox.survival(now, [24.0, 168.0, 720.0]))
    timed("node_risk (4 models, fit + score)", lambda: incident_model.node_risk(samples, start, as_of))
    timed("node_actions", lambda: exports.build_node_actions(con, as_of))
    with pl.Config(tbl_rows=20, tbl_cols=-1, tbl_width_chars=140):
        print(evaluation.pivot(on="metric", index="model", values="value"))
    lemon_ev = lemon_scoring.evaluate(features, labels, as_of, cfg, None)
    with pl.Config(tbl_rows=20, tbl_cols=-1, tbl_width_chars=140):
        print(lemon_ev.pivot(on="metric", index="model", values="value"))
    con.close()


if __name__ == "__main__":
    main()
