"""Issue 9's acceptance bar for the lemon classifier: on the rsc2 preset at
1,000 nodes x 60 days, for two seeds, precision and recall of at least 0.9 on
the held-out last window (hosts held out too), with Meta's thresholds judged
on the same snapshot beside it. About a minute and a half per seed on one core: a model-quality bar, run by
`make bench` (marker bench), not by `make test` (issue 35: the suite's quarter of CPU it took)."""
from __future__ import annotations

import polars as pl
import pytest

from analysis import warehouse
from analysis.derive.taxonomy import load
from analysis.ingest.engine import ingest_directory
from analysis.nodes import lemon_scoring
from analysis.simulate.config import preset
from analysis.simulate.run import simulate
from assets.pure_builds import build_all


pytestmark = pytest.mark.bench


@pytest.mark.parametrize("seed", [1, 2])
def test_lemon_classifier_reaches_09_precision_and_recall(seed, tmp_path):
    simulate(preset("rsc2", nodes=1000, days=60, seed=seed, telemetry_jobs=0), tmp_path / "src")
    truth = pl.read_csv(tmp_path / "src/truth/nodes.csv")
    labels = truth.select("host", "is_lemon", confirmed_at=pl.lit(None, pl.Datetime("us")), component="defect")
    con = warehouse.connect(tmp_path / "w.duckdb")
    ingest_directory(con, tmp_path / "src")
    build_all(con, load())
    run = lemon_scoring.score_lemons(con, labels=labels)
    con.close()
    ev = {(m, k): v for m, k, v in run.evaluation.select("model", "metric", "value").iter_rows()}
    print(f"seed {seed}:", {f"{m}.{k}": round(v, 3) for (m, k), v in sorted(ev.items())})
    assert set(run.evaluation["split"]) == {"last_window_hosts_held_out"}
    assert ev[("lemon_classifier", "precision")] >= 0.9 and ev[("lemon_classifier", "recall")] >= 0.9
    assert {("meta_thresholds", k) for k in ("precision", "recall")} <= set(ev)  # the baseline is reported beside it
    # the model scored today (trained on every labelled snapshot) agrees with the truth as well
    flagged = set(run.scores.filter("is_lemon")["host"])
    lemons = set(truth.filter("is_lemon")["host"])
    assert len(flagged & lemons) >= 0.9 * len(lemons) and len(flagged & lemons) >= 0.9 * len(flagged)
