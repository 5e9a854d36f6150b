"""CPU and wall seconds of the derived steps rebuilt by a nightly, on a COPY of a warehouse (it writes to it).

    cp /tmp/gs330/warehouse.duckdb /tmp/me/w.duckdb
    python bench/derived_steps.py /tmp/me/w.duckdb [STEP ...] [--increment-after TIMESTAMP]

Each step is built from scratch (job_log_events, classified_events, failure_attribution and job_runs too: their
marks are dropped first). With --increment-after,
job_log_events is timed as the nightly after that ingest time builds it: its mark set to the files
ingested up to then, and the jobs the later sacct dumps name taken as changed (out of job_log_jobs)."""
from __future__ import annotations

import argparse
import resource
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from analysis import sql, warehouse  # noqa: E402
from analysis.derive import attribution
from analysis.derive import joblogs
from analysis.derive import metrics
from analysis.derive.taxonomy import load  # noqa: E402

STEPS = {"job_log_events": joblogs.build_events,
         "classified_events": lambda con: attribution.classify_events(con, load()),
         "failure_attribution": lambda con: attribution.attribute_failures(con, load()),
         "job_runs": attribution.build_job_runs,
         "job_run_ettr": lambda con: metrics.build_run_ettr(con, metrics.MetricsConfig())}


FORGET = {"classified_events": "derive/forget_classify_marks", "failure_attribution": "derive/forget_attribution_marks",
          "job_runs": "derive/forget_job_runs_marks"}


def cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def timed(con, name: str, step) -> None:
    wall, used = time.perf_counter(), cpu()
    out = step(con)
    print(f"{name:28} wall {time.perf_counter() - wall:6.2f} s  CPU {cpu() - used:6.2f} s  {out}", flush=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("db", type=Path)
    ap.add_argument("steps", nargs="*", default=list(STEPS), help=f"of {', '.join(STEPS)} (default: all)")
    ap.add_argument("--increment-after", help="an ingested_at between the base's files and the new day's")
    args = ap.parse_args()
    if set(args.steps) - set(STEPS):
        ap.error(f"unknown steps {sorted(set(args.steps) - set(STEPS))}: choose from {', '.join(STEPS)}")
    con = warehouse.connect(args.db)
    for name in args.steps:
        if name == "job_log_events":
            sql.run(con, "ops/derived_mark_forget", {"step": joblogs.STEP})
        if name in FORGET:  # the steps that extend their tables when their mark says they may: from scratch
            sql.run(con, FORGET[name])
        timed(con, name, STEPS[name])
    if args.increment_after:
        sql.run(con, "ops/bench_derived_mark_as_of", {"step": joblogs.STEP, "sources": joblogs.SOURCES,
                                                  "through": args.increment_after})
        sql.run(con, "ops/bench_job_log_jobs_changed_after", {"through": args.increment_after})
        timed(con, "job_log_events (increment)", joblogs.build_events)
    con.close()


if __name__ == "__main__":
    main()
