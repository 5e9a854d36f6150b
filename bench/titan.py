"""The incident model on real data: ORNL Titan GPU lifetimes, through goodput's normal sources.

    python bench/titan.py [--workdir /tmp/titan] [--every-days 150]

Converts the Titan GPU-life table into a goodput source directory, ingests it,
builds node_incidents (assets.pure_builds.build_all), then builds incident_samples
and evaluates Cox-Time against the three exponential baselines on goodput's
time split (analysis.nodes.incident_model.evaluate). Prints the evaluation table
(model x metric), sample counts, the time of each step and peak RSS. Most
Titan slots share a status (no incident yet, same age), so ties are common:
goodput's concordance counts them half (pycox's adj_antolini).
The default --every-days 150 keeps the samples under ~300k (18,687 slots x 5.5 years).

Data: /work/shared/datasets/titan-gpu-life (from github.com/olcf/TitanGPULife,
data as of 2020-06-04). No licence file; the authors ask that users cite
G. Ostrouchov, D. Maxwell, R. A. Ashraf, C. Engelmann, M. Shankar, J. H. Rogers,
"GPU Lifetimes on Titan Supercomputer: Survival Analysis and Reliability", SC'20.

How Titan maps onto goodput's inputs (gc_full.csv: one row per GPU serial and
slot life segment, 2013-11 .. 2019-08):
  * a slot (cabinet-chassis-slot-node, e.g. c11-2c1s4n1) is a host; service
    nodes (titan.service.txt) are dropped;
  * a segment ending in event DBE -> an NVIDIA Xid 48 kernel line, OTB -> Xid 79
    ("GPU has fallen off the bus"), stamped at its remove time, in journalctl
    short-iso format as `goodput simulate` writes it (kernel/kern-YYYY-MM.log);
    both are critical in taxonomy/xids.yaml, so each is a node incident;
  * a segment with out=TRUE -> a repair ticket opened at remove, closed a day
    later, component GPU, resolution "replaced GPU" (tickets/tickets.csv);
  * every slot -> a topology row (switch = cabinet "c11-2", port = "c1s4n1");
  * timestamps are taken as UTC (the table has no zone; only differences matter).
No Slurm jobs, drains, health checks or benign kernel lines exist, so a node's
"uptime" is the time since its last incident and every slot is at risk from the
first event or ticket in the data (goodput's node_population).
"""
from __future__ import annotations

import argparse
import shutil
import sys
import warnings
from collections import Counter
from datetime import datetime, timedelta
from pathlib import Path

import polars as pl

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from analysis import warehouse  # noqa: E402
from analysis.derive import taxonomy
from analysis.ingest.engine import ingest_directory  # noqa: E402
from analysis.nodes import incident_model
from analysis.nodes import survival
from assets import pure_builds  # noqa: E402
from timing import peak_mb, timed  # noqa: E402  (bench/ is sys.path[0] when run as a script)

DATA = Path("/work/shared/datasets/titan-gpu-life")
PCI = "0000:02:00"  # one K20X per Titan node
XID = {"DBE": "48, pid={pid}, name=python, An uncorrectable double bit error (DBE) has been detected on GPU "
              "in the framebuffer at partition 2, subpartition 0.",
       "OTB": "79, pid={pid}, name=python, GPU has fallen off the bus."}
ISO = "%Y-%m-%dT%H:%M:%S"
warnings.filterwarnings("ignore", module="torchtuples")  # pytorch deprecation notes on pycox's own calls


def load_segments() -> pl.DataFrame:
    service = {line.split()[2] for line in (DATA / "titan.service.txt").read_text().splitlines() if line.strip()}
    seg = pl.read_csv(DATA / "gc_full.csv", schema_overrides={"SN": pl.Utf8})
    print(f"gc_full.csv: {seg.height:,} segments, {seg['location'].n_unique():,} slots, "
          f"{seg.filter(pl.col('location').is_in(list(service))).height} on service nodes (dropped)")
    return (seg.filter(~pl.col("location").is_in(list(service)))
            .with_columns(pl.col("insert", "remove").str.to_datetime("%Y-%m-%d %H:%M:%S")))


def write_source(seg: pl.DataFrame, src: Path) -> dict:
    """gc_full.csv -> kernel/, tickets/, topology/ (+ goodput.yaml) under ``src``."""
    shutil.rmtree(src, ignore_errors=True)
    for d in ("kernel", "tickets", "topology"):
        (src / d).mkdir(parents=True)
    (src / "goodput.yaml").write_text("# written by bench/titan.py\ntz: UTC\n")
    events = seg.filter(pl.col("event").is_not_null()).sort("remove", "location")
    by_month: dict[str, list[str]] = {}
    for i, (t, host, ev) in enumerate(events.select("remove", "location", "event").iter_rows()):
        msg = XID[ev].format(pid=10_000 + i)
        by_month.setdefault(f"{t:%Y-%m}", []).append(f"{t:{ISO}}+0000 {host} kernel: NVRM: Xid (PCI:{PCI}): {msg}")
    for month, lines in by_month.items():
        (src / "kernel" / f"kern-{month}.log").write_text("\n".join(lines) + "\n")
    out = seg.filter(pl.col("out").fill_null(False)).sort("remove", "location")
    pl.DataFrame({"ticket_id": [f"T-{i + 1:05d}" for i in range(out.height)], "host": out["location"],
                  "opened": out["remove"].dt.strftime(ISO),
                  "closed": (out["remove"] + timedelta(days=1)).dt.strftime(ISO),
                  "component": "GPU", "resolution": "replaced GPU"}).write_csv(src / "tickets" / "tickets.csv")
    slots = seg.select(host=pl.col("location").unique().sort())
    cabinet = r"^(c\d+-\d+)(.*)$"  # c11-2 | c1s4n1
    slots.select(switch=pl.col("host").str.extract(cabinet, 1), port=pl.col("host").str.extract(cabinet, 2),
                 host="host", hca=pl.lit("")).write_csv(src / "topology" / "topology.csv")
    return {"kernel_lines": events.height, "kernel_files": len(by_month), "tickets": out.height, "slots": slots.height,
            "events": dict(Counter(events["event"]))}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--workdir", type=Path, default=Path("/tmp/titan"))
    ap.add_argument("--every-days", type=int, default=150,
                    help="days between a node's regular status samples (150: ~286k samples; 30: ~1.3M)")
    args = ap.parse_args()
    src, db = args.workdir / "source", args.workdir / "titan.duckdb"
    args.workdir.mkdir(parents=True, exist_ok=True)
    for p in (db, db.with_name(db.name + ".wal")):
        p.unlink(missing_ok=True)

    seg = timed("read csv", load_segments)
    print(timed("write source", lambda: write_source(seg, src)))
    con = warehouse.connect(db)
    summary = timed("ingest", lambda: ingest_directory(con, src))
    print("ingest:", dict(Counter(o.status for o in summary.outcomes)),
          f"rows {sum(o.rows for o in summary.outcomes):,}", f"rejects {sum(o.rejects for o in summary.outcomes):,}")
    print("build_all:", timed("build_all", lambda: pure_builds.build_all(con, taxonomy.load())))
    print(con.sql("SELECT cause, rule, severity, count(*) AS incidents, sum(events) AS events, "
                  "count(ticket_id) AS with_ticket FROM node_incidents GROUP BY ALL ORDER BY incidents DESC"))

    last = con.execute("SELECT max(event_time) FROM node_events").fetchall()[0][0]
    end = datetime(last.year, last.month, last.day) + timedelta(days=1)  # midnight after the last event
    start = incident_model.first_day(con)
    samples = timed("build_samples", lambda: incident_model.build_samples(con, end, every_days=args.every_days))
    cfg = incident_model.IncidentConfig(every_days=args.every_days)
    split = start + (end - start) * (1 - cfg.test_share)
    train = incident_model.censor_at(samples, split).filter(pl.col("duration_h") > 0)
    test = samples.filter((pl.col("t") >= split) & (pl.col("t") < end) & (pl.col("duration_h") > 0))
    print(f"span {start:%Y-%m-%d} .. {end:%Y-%m-%d}, split {split:%Y-%m-%d}; samples {samples.height:,} "
          f"({samples['host'].n_unique():,} hosts, {samples['event'].sum():,} followed by an incident); "
          f"train {train.height:,} ({train['event'].sum():,} events); "
          f"test {test.height:,} ({test['event'].sum():,} events), "
          f"evaluated on {min(test.height, cfg.max_eval_samples):,}")

    frames = []
    for model in survival.all_models():  # one at a time to time each; evaluate's split and test sample are seeded
        frames.append(timed(model.name, lambda: incident_model.evaluate(samples, start, end, cfg, [model])))
    evaluation = pl.concat(frames)
    table = evaluation.pivot("metric", index="model", values="value")
    with pl.Config(tbl_rows=20, tbl_cols=10, float_precision=4, tbl_width_chars=140):
        print(table)
    print(f"split {evaluation['split'][0] if evaluation.height else '-'}, n test = "
          f"{evaluation['n'][0] if evaluation.height else 0}; peak RSS {peak_mb():,.0f} MB")
    con.close()


if __name__ == "__main__":
    main()
