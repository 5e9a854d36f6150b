"""Faulty-machine detection at scale: Minder on one 15-minute window of 1,000 machines.

    python bench/detect.py [--machines 1000] [--minutes 15]

Trains the per-metric LSTM-VAEs on 20 healthy 16-machine jobs (times the
training and reports the models' size), saves them as the nightly does and
loads them back (models on a cadence: the nightly loads and only scores),
then times the scoring of one job of --machines machines and --minutes minutes
of 10 s samples, with a drifting machine in it: the frame (after the rows are
read), Minder alone and every method. CPU seconds are the cost on a shared
machine; the last line is scoring's CPU-s per 1,000 machines x 15 minutes
(frame + every method, with the loaded models), training's beside it.
"""
from __future__ import annotations

import argparse
import io
import json
import sys
import tempfile
from datetime import datetime, timedelta
from pathlib import Path

import numpy as np
import polars as pl
import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from analysis.simulate.telemetry import TelemetryJob, job_frame  # noqa: E402
from analysis.telemetry import detect, frames, saved, train  # noqa: E402
from timing import cpu, timed  # noqa: E402  (bench/ is sys.path[0] when run as a script)


def _rows(job: TelemetryJob, rng, minutes: int) -> pl.DataFrame:
    rows, _ = job_frame(job, rng, window_minutes=minutes)
    return rows.select("time", "host", "metric", "value").with_columns(pl.col("time").dt.replace_time_zone(None))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--machines", type=int, default=1000)
    ap.add_argument("--minutes", type=int, default=15)
    args = ap.parse_args()
    rng = np.random.default_rng(1)
    t0 = datetime(2024, 3, 1)
    healthy = []
    for i in range(20):
        job = TelemetryJob(f"train-{i}", [f"t{i:02d}h{h:02d}" for h in range(16)], t0, t0 + timedelta(hours=1), None, None)
        healthy.append(frames.build(job.job_id, _rows(job, rng, 60)))
    cfg = detect.DetectConfig()
    trained, train_cpu = cpu(lambda: timed("train (8 VAEs + integrated, 20 jobs)",
                                           lambda: train.train(healthy, cfg, epochs=30)))
    with tempfile.TemporaryDirectory() as tmp:
        meta = {"trained_to": t0, "data_to": t0}
        _, path = saved.save(trained, Path(tmp), meta)
        models = timed("load the saved models", lambda: saved.load(json.loads(path.with_suffix(".json").read_text()),
                                                                     path.with_suffix(".json")))
    buf = io.BytesIO()
    torch.save({m: v.state_dict() for m, v in models.per_metric.items()}, buf)
    params = sum(p.numel() for v in models.per_metric.values() for p in v.parameters())
    print(f"  per-metric models: {params:,} parameters, {buf.getbuffer().nbytes / 1024:.0f} KiB saved")
    hosts = [f"gpu{h:05d}" for h in range(args.machines)]
    end = t0 + timedelta(hours=3)
    job = TelemetryJob("big", hosts, end - timedelta(minutes=args.minutes), end, hosts[17],
                       end - timedelta(minutes=6))
    rows = _rows(job, rng, args.minutes)
    frame, frame_cpu = cpu(lambda: timed(f"load: frame of {args.machines} machines x {args.minutes} min "
                                         f"({rows.height:,} rows)", lambda: frames.build("big", rows)))
    alerts = timed("detect: Minder", lambda: detect.detect(models, frame, cfg, methods=("minder",)))
    print("  ", [(a["host"], a["metric"], str(a["confirmed_at"])) for a in alerts if a["method"] == "minder"][:3])
    _, detect_cpu = cpu(lambda: timed("detect: all methods", lambda: detect.detect(models, frame, cfg)))
    units = args.machines / 1000 * args.minutes / 15
    print(f"scoring: {(frame_cpu + detect_cpu) / units:.2f} CPU-s per 1,000 machines x 15 min (frame + every "
          f"method, saved models); training: {train_cpu:.1f} CPU-s once per retrain")


if __name__ == "__main__":
    main()
