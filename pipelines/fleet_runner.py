"""`goodput run --fleet`: every cluster's pipeline, each in its own process and warehouse, then the fleet report.

A cluster's run is the single-cluster run (pipelines/runner.py) on ``SRC/<cluster>`` into ``DB_DIR/<cluster>.duckdb``
and ``OUT/<cluster>/``; ``jobs`` of them run at once. Each is its own process (spawned, not forked: Dagster, DuckDB
and torch keep threads a fork would copy half-way), so one cluster's crash or memory ends only its own run."""
from __future__ import annotations

import logging
import multiprocessing
from concurrent.futures import ProcessPoolExecutor, as_completed
from dataclasses import dataclass, field
from pathlib import Path

from analysis.commands import data_health
from analysis.fleet.clusters import Cluster, clusters_in, warehouse_of

progress_log = logging.getLogger("goodput.progress")


@dataclass
class ClusterRun:
    cluster: str
    status: str  # ok, degraded or failed (analysis.commands.data_health)
    text: str  # the cluster run's summary, as `goodput run` prints it
    report: Path | None = None

    @property
    def exit_code(self) -> int:
        return data_health.EXIT_CODES[self.status]


@dataclass
class FleetResult:
    runs: list[ClusterRun]
    report: Path | None = None
    problems: list[str] = field(default_factory=list)  # the fleet step's own (its report could not be built)

    @property
    def status(self) -> str:
        """The worst of the clusters', degraded at least when the fleet report failed."""
        return data_health.worst([*(r.status for r in self.runs), *([data_health.DEGRADED] if self.problems else [])])

    @property
    def exit_code(self) -> int:
        return data_health.EXIT_CODES[self.status]

    def summary(self) -> str:
        lines = []
        for r in self.runs:
            lines += [f"== cluster {r.cluster}: {r.status} (exit {r.exit_code})", r.text, ""]
        lines.append("Fleet: " + ", ".join(f"{r.cluster} {r.status}" for r in self.runs))
        lines += [f"FLEET: {p}" for p in self.problems]
        if self.report:
            lines.append(f"Fleet report: {self.report.resolve()}")
        lines.append(f"Fleet run exit {self.exit_code}.")
        return "\n".join(lines)


def run_fleet(fleet_source: Path, db_dir: Path, out: Path, jobs: int = 1, quiet: bool = False,
              **options) -> FleetResult:
    """Run every cluster of ``fleet_source`` (``jobs`` at a time), then write the fleet report over their warehouses.
    ``options``: what run_pipeline takes besides source, db, out and cluster (tz, rules_file, rebuild, ...)."""
    clusters = clusters_in(fleet_source)
    db_dir, out = Path(db_dir), Path(out)
    db_dir.mkdir(parents=True, exist_ok=True)
    work = [(c, warehouse_of(db_dir, c.name), out / c.name) for c in clusters]
    progress_log.info("fleet: %d clusters (%s), %d at a time", len(work), ", ".join(c.name for c in clusters), jobs)
    if jobs <= 1 or len(work) == 1:
        runs = [run_cluster(c, db, o, quiet, options) for c, db, o in work]
    else:
        context = multiprocessing.get_context("spawn")
        with ProcessPoolExecutor(max_workers=min(jobs, len(work)), mp_context=context) as pool:
            pending = [pool.submit(run_cluster, c, db, o, quiet, options) for c, db, o in work]
            runs = [f.result() for f in as_completed(pending)]
    runs.sort(key=lambda r: r.cluster)
    return _fleet_step(runs, db_dir, out)


def run_cluster(cluster: Cluster, db: Path, out: Path, quiet: bool, options: dict) -> ClusterRun:
    """One cluster's run (in a worker process when several run at once); its progress lines name the cluster."""
    from analysis.fleet.clusters import FleetError
    from analysis.commands.preflight import one_line
    from pipelines.runner import SourceError, run_pipeline

    _prefix_progress(cluster.name, quiet)
    try:
        result = run_pipeline(cluster.source, db, out, cluster=cluster.name, record_steps=False, **options)
    except (SourceError, FleetError) as exc:
        return ClusterRun(cluster.name, data_health.FAILED, f"  {one_line(exc)}")
    except Exception as exc:  # noqa: BLE001 - one cluster's crash is its own: the others' runs stand
        return ClusterRun(cluster.name, data_health.FAILED, f"  goodput stopped on {type(exc).__name__}: "
                          f"{one_line(exc)}")
    return ClusterRun(cluster.name, result.status, result.report(), result.report_path)


def _prefix_progress(cluster: str, quiet: bool) -> None:
    """In a worker process: log as `goodput run` does, each line prefixed with the cluster."""
    import sys

    root = logging.getLogger("goodput")
    if not root.handlers and not logging.getLogger().handlers:
        handler = logging.StreamHandler(sys.stderr)
        handler.setFormatter(logging.Formatter(f"[{cluster}] %(message)s"))
        root.addHandler(handler)
        root.setLevel(logging.WARNING if quiet else logging.INFO)
        root.propagate = False


def _fleet_step(runs: list[ClusterRun], db_dir: Path, out: Path) -> FleetResult:
    """The fleet report over the clusters' warehouses; a failure here degrades the fleet run, it loses nothing."""
    from analysis.commands.preflight import one_line

    built = [r for r in runs if r.report is not None]
    if not built:
        return FleetResult(runs, None, ["no cluster built its report: no fleet report"])
    try:
        from reports.fleet import render_fleet_report

        report = render_fleet_report(db_dir, out / "fleet", {r.cluster: r.report for r in built})
    except Exception as exc:  # noqa: BLE001 - the clusters' own reports and exports stand without it
        return FleetResult(runs, None, [f"the fleet report failed: {type(exc).__name__}: {one_line(exc)}"])
    return FleetResult(runs, report)
