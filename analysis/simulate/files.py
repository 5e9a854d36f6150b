"""The files written once at the end: node events, tickets, cabling map,
benchmarks, telemetry, deliberately malformed lines, and the truth tables."""
from __future__ import annotations

import csv
from datetime import timedelta
from pathlib import Path

import numpy as np
import polars as pl

from analysis.simulate import stragglers
from analysis.simulate.benchmarks import write_benchmarks
from analysis.simulate.cluster import Cluster
from analysis.simulate.config import SimConfig
from analysis.simulate.joblogs import JobLogWriter, write_counters
from analysis.simulate.kubernetes import NodeStates
from analysis.simulate.recorder import Recorder
from analysis.simulate.telemetry import TelemetryJob, write_telemetry
from analysis.simulate.writers import iso


def _csv(path: Path, header: list[str], rows) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", newline="") as f:
        w = csv.writer(f)
        w.writerow(header)
        w.writerows(rows)


def write_all(cfg: SimConfig, cluster: Cluster, rec: Recorder, out: Path, rng: np.random.Generator) -> dict:
    ts = lambda t: iso(cfg.start, t)  # noqa: E731
    horizon = cfg.days * 86400
    (out / "goodput.yaml").write_text("# written by goodput simulate\ntz: UTC\n")
    _csv(out / "topology" / "cabling.csv", ["switch", "port", "host", "hca", "ip"], cluster.topology_rows())
    if rec.k8s is not None:  # the same drains as kubelet Events and a Node watch
        NodeStates(out, cfg.start, cluster.hosts, cfg.seed, horizon).write(rec.drains)
    else:  # Slurm's node states
        (out / "slurm_events").mkdir(exist_ok=True)
        with (out / "slurm_events" / "sacctmgr-events.txt").open("w") as f:
            f.write("NodeName|TimeStart|TimeEnd|State|Reason|User\n")
            for host, start, back, state, reason, user in sorted(rec.drains, key=lambda d: d[1]):
                f.write(f"{host}|{ts(start)}|{ts(back) if back < horizon else 'Unknown'}|{state}|{reason}|{user}\n")
    _csv(out / "tickets" / "tickets.csv", ["ticket_id", "host", "opened", "closed", "component", "resolution"],
         [(tid, host, ts(o), ts(c) if c < horizon else "", comp, res) for tid, host, o, c, comp, res in rec.tickets
          if o < horizon])
    defects = {cluster.hosts[i]: comp for i, comp in cluster.lemon.items()}
    bench_truth = write_benchmarks(out, cluster.hosts, defects, cfg.start, cfg.days, rng,
                                   every_days=cfg.benchmark_every_days)
    faulty = _telemetry_jobs(cfg, rec, rng)
    tele_truth = write_telemetry(out, faulty, rng)
    # completed jobs' telemetry from a stream of its own: the rest of the output stays as it was
    healthy_rng = np.random.default_rng([cfg.seed, 7])
    healthy = _completed_telemetry_jobs(cfg, rec, {j.job_id for j in faulty})
    tele_truth = pl.concat([tele_truth, write_telemetry(out, healthy, healthy_rng)])
    extra = {}
    if cfg.straggler_jobs > 0:  # after the other telemetry: a job with a file of its own is not picked
        models, slow, new_cases = stragglers.plan(cfg, rec.step_candidates, rec.log_cases,
                                                  {j.job_id for j in faulty + healthy})
        rec.log_cases.extend(new_cases)
        extra = stragglers.write(out, cfg, models, slow)
    log_lines = _job_logs(cfg, cluster, rec, out)
    malformed = _malformed(rec, out) if cfg.malformed_lines else []
    truth = out / "truth"
    rec.close_instances()
    _csv(truth / "nodes.csv", ["host", "rack", "leaf", "port", "is_lemon", "defect"],
         [(h, int(cluster.rack[i]), cluster.leaf[i], cluster.port[i], i in cluster.lemon, cluster.lemon.get(i, ""))
          for i, h in enumerate(cluster.hosts)])
    _csv(truth / "faults.csv", ["host", "time", "cause", "hardware", "lemon"], rec.faults)
    _csv(truth / "decoys.csv", ["job_id", "instance", "host", "event_time", "kind", "code", "why"], rec.decoys)
    _csv(truth / "malformed_lines.csv", ["file", "line_no", "reason"], malformed)
    _csv(truth / "health_checks.csv", ["check", "added_day"],
         [("gpu_count", 0), ("gpu_row_remap", cfg.health_check_added_day if cfg.health_check_added_day >= 0 else cfg.days // 2)])
    bench_truth.write_csv(truth / "benchmarks.csv")
    tele_truth.write_csv(truth / "telemetry_faults.csv")
    _csv(truth / "job_logs.csv", ["job_id", "instance", "variant", "culprit_host", "state"],
         [(c.job_id, c.instance, c.variant, c.culprit or "", c.state) for c in rec.log_cases])
    return {"job_instances": rec.instance_count, "states": dict(rec.states), "faults": len(rec.faults),
            "lemons": len(cluster.lemon), "decoys": len(rec.decoys), "malformed_lines": len(malformed),
            "drains": len(rec.drains), "tickets": len(rec.tickets), "job_logs": len(rec.log_cases),
            "job_log_lines": log_lines, **extra}


def _job_logs(cfg: SimConfig, cluster: Cluster, rec: Recorder, out: Path) -> int:
    """joblogs/ (one file per job id, instances appended in order) and network/ port counters, each from
    a random stream of its own."""
    writer = JobLogWriter(out, cfg.start, cluster.hosts, np.random.default_rng([cfg.seed, 13]))
    # the instances with step lines only (stragglers.py) from a stream of their own: the others stay as they were
    steps_writer = JobLogWriter(out, cfg.start, cluster.hosts, np.random.default_rng([cfg.seed, 29]))
    lines = sum((steps_writer if c.variant == "steps" else writer).write(c)
                for c in sorted(rec.log_cases, key=lambda c: (c.job_id, c.instance)))
    write_counters(out, cluster.hosts, cfg.days, cfg.start, rec.link_bursts, np.random.default_rng([cfg.seed, 17]))
    return lines


def _telemetry_jobs(cfg: SimConfig, rec: Recorder, rng: np.random.Generator) -> list[TelemetryJob]:
    """A few large jobs that a node fault ended: their last hour, drift included."""
    seen, picked = set(), []
    for cand in sorted(rec.telemetry_candidates, key=lambda c: (-len(c[1]), c[2])):  # the largest first
        if cand[0] not in seen and cand[4] in cand[1]:
            seen.add(cand[0])
            picked.append(cand)
    picked = sorted(picked[: cfg.telemetry_jobs], key=lambda c: c[2])
    jobs = []
    for job_id, hosts, start, end, bad, fault in picked:
        to_dt = lambda t: cfg.start + timedelta(seconds=t)  # noqa: E731
        drift = max(start, fault - float(rng.uniform(180, 480)))
        jobs.append(TelemetryJob(job_id, hosts, to_dt(start), to_dt(end), bad, to_dt(drift)))
    return jobs


def _completed_telemetry_jobs(cfg: SimConfig, rec: Recorder, taken: set[str]) -> list[TelemetryJob]:
    """The largest jobs that completed (not a requeue of a job already picked: one file per job id): an
    hour of running each, decoys included; in ``telemetry_slow_jobs`` of them, drawn from a stream of
    their own, one machine runs slow for the last 25-90% of that hour without failing the job."""
    n = 3 * cfg.telemetry_jobs if cfg.telemetry_healthy_jobs is None else cfg.telemetry_healthy_jobs
    n_slow = cfg.telemetry_jobs if cfg.telemetry_slow_jobs is None else cfg.telemetry_slow_jobs
    free = [c for c in rec.healthy_candidates if c[0] not in taken]
    picked = sorted(sorted(free, key=lambda c: (-len(c[1]), c[2]))[:n], key=lambda c: c[2])
    rng = np.random.default_rng([cfg.seed, 19])
    slow = set(rng.choice(len(picked), size=min(n_slow, len(picked)), replace=False).tolist())
    to_dt = lambda t: cfg.start + timedelta(seconds=t)  # noqa: E731
    jobs = []
    for i, (job_id, hosts, start, end) in enumerate(picked):
        bad, fault = None, None
        if i in slow:
            bad = hosts[int(rng.integers(len(hosts)))]
            fault = to_dt(end - float(rng.uniform(0.25, 0.9)) * min(3600.0, end - start))
        jobs.append(TelemetryJob(job_id, hosts, to_dt(start), to_dt(end), bad, fault, slow=i in slow))
    return jobs


def _malformed(rec: Recorder, out: Path) -> list[tuple[str, int, str]]:
    """Append a few broken lines the way real files get them, and say where."""
    cases = [(rec.sacct, "1234567|1234567|trunc", "truncated sacct row") if rec.sacct is not None else
             (rec.k8s.log, '{"type":"MODIFIED","object":{"apiVersion":"v1","kind":"Pod","metadata":{"na',
              "watch line cut off"),
             (rec.kernel, "\ufffd\ufffd@\ufffd garbage after an unclean shutdown", "no timestamp header"),
             (rec.switch, "<<< log relay restarted >>>", "no syslog header"),
             (rec.health, '{"time": "2024-03-0', "truncated JSON")]
    written = []
    for log, text, reason in cases:
        if not log.files:
            continue
        path = log.files[min(log.files)]
        with path.open("r+") as f:
            n = sum(1 for _ in f)
            f.write(text + "\n")
        written.append((str(path.relative_to(out)), n + 1, reason))
    return written
