"""Distributed-failure attribution from job logs against the simulator's truth, over several seeds.

    python bench/joblogs_eval.py [--seeds 1 2 3 4 5] [--nodes 128] [--days 14]

A fabric-heavy cluster (faults: 40% NCCL timeouts, 40% InfiniBand links, 20% GPU memory; jobs of 8-128 GPUs
common) as in tests/test_joblogs.py. In scope: failures whose truth cause is nccl_timeout or infiniband_link and
that left no kernel line within the attribution window. Right = the truth's cause and its culprit host (none for
a fabric-wide timeout; a link a<->b counts when it contains the culprit). Prints precision, recall and the
counts per variant (hang, fabric, link), and how the user failures with job logs came out.
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
from analysis.derive.taxonomy import load  # noqa: E402
from analysis.ingest.engine import ingest_directory  # noqa: E402
from analysis.simulate.config import preset  # noqa: E402
from analysis.simulate.run import simulate  # noqa: E402
from assets.pure_builds import build_all  # noqa: E402
from tests.test_joblogs import _sim_truth  # noqa: E402

FABRIC = ["nccl_timeout", "infiniband_link"]


def one(seed: int, nodes: int, days: int, work: Path) -> dict:
    cfg = preset("small", nodes=nodes, days=days, seed=seed, failure_rate=150.0, telemetry_jobs=0, lemon_share=0.0,
                 size_probs=(0.2, 0.1, 0.1, 0.1, 0.15, 0.15, 0.1, 0.1, 0.0, 0.0, 0.0),
                 cause_mix=(("nccl_timeout", 0.4), ("infiniband_link", 0.4), ("gpu_memory", 0.2)))
    simulate(cfg, work / "src")
    con = warehouse.connect(work / "w.duckdb")
    t0 = time.perf_counter()
    ingest_directory(con, work / "src")
    build_all(con, load())
    seconds = time.perf_counter() - t0
    m = _sim_truth(work / "src", con)
    con.close()
    scope = m.filter(pl.col("cause").is_in(FABRIC) & ~pl.col("kernel") & pl.col("state").is_in(["FAILED", "NODE_FAIL"]))
    predicted = m.filter(pl.col("pred").is_in(FABRIC) & ~pl.col("kernel"))
    users = m.filter(pl.col("variant") == "user")
    per = {v: f"{scope.filter(pl.col('variant') == v)['right'].sum()}/{scope.filter(pl.col('variant') == v).height}"
           for v in ("hang", "fabric", "link")}
    return {"seed": seed, "in_scope": scope.height, "predicted": predicted.height,
            "precision": predicted["right"].mean(), "recall": scope["right"].mean(), **per,
            "user_logs_stay_user": f"{(users['pred'] == 'user').sum()}/{users.height}", "ingest+build_s": seconds}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--seeds", type=int, nargs="+", default=[1, 2, 3, 4, 5])
    ap.add_argument("--nodes", type=int, default=128)
    ap.add_argument("--days", type=int, default=14)
    args = ap.parse_args()
    rows = []
    for seed in args.seeds:
        with tempfile.TemporaryDirectory() as tmp:
            rows.append(one(seed, args.nodes, args.days, Path(tmp)))
            print(rows[-1], flush=True)
    table = pl.DataFrame(rows)
    with pl.Config(tbl_rows=50, tbl_cols=20, tbl_width_chars=200):
        print(table)
    print(f"pooled: precision {table['precision'].mean():.3f} (min {table['precision'].min():.3f}), "
          f"recall {table['recall'].mean():.3f} (min {table['recall'].min():.3f})")


if __name__ == "__main__":
    main()
