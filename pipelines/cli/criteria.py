"""`goodput criteria`: relearn the benchmark criteria, judge every node, export for validation runs."""
from __future__ import annotations

from pathlib import Path

import click

from analysis import warehouse
from analysis.paths import RUN_OUT
from analysis.settings import CriteriaConfig
from pipelines.cli.common import _db_option, setting_option
from pipelines.cli.models import _open

# Imports inside the commands are deferred on purpose: `goodput --help` and each command load only what they use
# (Dagster, DuckDB, polars, torch take seconds).


@click.command("criteria")
@_db_option
@click.option("--out", "out", type=click.Path(file_okay=False, path_type=Path), default=RUN_OUT, show_default=True,
              help="The output folder, as for `goodput run`: criteria.json, rules.yaml and baseline.json go in "
                   "OUT/exports/criteria/, where `goodput run --out OUT` writes them.")
@setting_option("--alpha", type=click.FloatRange(0.5, 1.0, max_open=True), setting=(CriteriaConfig, "alpha"),
                help="Required similarity to the criterion (0.95: 5% worse fails, as SuperBench's variance rules).")
@setting_option("--window-days", type=click.IntRange(1, 3650), setting=(CriteriaConfig, "window_days"),
                help="Validation runs learned from and judged: this many days before the latest run.")
@click.option("--metrics", "metrics", type=click.Path(dir_okay=False, exists=True, path_type=Path), default=None,
              help="Metrics catalog entries tried before catalog/benchmark_metrics.yaml [default: $GOODPUT_METRICS].")
@setting_option("--repeatability-floor", type=click.FloatRange(0.0, 1.0), setting=(CriteriaConfig, "repeatability_floor"),
                help="A benchmark whose repeatability among healthy nodes is under this blocks the export.")
@click.option("--skip-noisy", is_flag=True, help="Export without the benchmarks under the floor instead of not at all.")
def criteria_command(db: Path | None, out: Path, alpha: float, window_days: int, metrics: Path | None,
                     repeatability_floor: float, skip_noisy: bool) -> None:
    """Learn each benchmark metric's criterion from the fleet's validation runs
    (Anubis Alg. 2), judge every node in every run of the window, store
    benchmark_criteria, benchmark_verdicts, benchmark_nodes and
    criteria_evaluation, and write them to OUT/exports/criteria/."""
    import os

    from analysis import fingerprints
    from analysis.criteria import catalog
    from analysis.criteria import run as criteria_run
    from analysis.version import made_by

    metrics = metrics or (Path(os.environ["GOODPUT_METRICS"]) if os.environ.get("GOODPUT_METRICS") else None)
    cfg = CriteriaConfig(alpha=alpha, window_days=window_days, repeatability_floor=repeatability_floor)
    con, db = _open(db, read_only=False)
    try:
        try:
            catalog.load(metrics)
            result = criteria_run.run(con, cfg, metrics, progress=lambda i, n: click.echo(f"  {i}/{n} metrics", err=True))
            fingerprints.forget_steps(con, ["benchmark_criteria"])  # the next run rebuilds it, and what reads it
        except (catalog.CatalogError, criteria_run.NoBenchmarks) as exc:
            raise click.ClickException(str(exc)) from None
        _print(result, cfg)
        try:
            paths = criteria_run.export(con, out / "exports" / "criteria", made_by(db), cfg, skip_noisy)
        except criteria_run.NoisyBenchmarks as exc:
            raise click.ClickException(f"criteria stored, not exported: {exc}") from None
        except OSError as exc:
            raise click.ClickException(f"cannot write to {out}: {exc.strerror or exc}") from None
    finally:
        con.close()
        warehouse.published(db)  # what readers open while the next run writes
    for name, path in paths.items():
        click.echo(f"{name:15} {path}")


def _print(result, cfg) -> None:
    import polars as pl

    from analysis.fmt import fmt_float, fmt_num, fmt_pct

    s = result.criteria.group_by("status").len().sort("status")
    click.echo(f"Criteria {result.version}: {result.criteria.height} metrics from {result.fleet} nodes, runs "
               f"{result.trained_from:%Y-%m-%d} to {result.trained_to:%Y-%m-%d} (alpha {fmt_float(cfg.alpha)}).")
    click.echo("  " + ", ".join(f"{st} {n}" for st, n in s.iter_rows()))
    guessed = result.criteria.filter(pl.col("guessed_direction"))
    if guessed.height:
        click.echo(f"  direction guessed from the name for {guessed.height} metric(s), e.g. "
                   + ", ".join(f"{b}/{m} ({d})" for b, m, d in guessed.select("benchmark", "metric", "direction")
                               .head(3).iter_rows()))
    click.echo("Benchmark                          repeat.  margin alg2 / IQR / k-means")
    for r in result.per_benchmark.iter_rows(named=True):
        m = [("-" if r[f"margin_{k}"] is None else fmt_num(r[f"margin_{k}"], 2)) for k in ("alg2", "iqr", "kmeans")]
        click.echo(f"  {r['benchmark'][:32]:32} {fmt_num(r['repeatability'], 3):7}  {' / '.join(m)}")
    click.echo(f"  repeat.: how alike the results of the nodes that passed are (1: identical; under "
               f"{fmt_float(cfg.repeatability_floor)} it blocks the export, or --skip-noisy leaves it out; n/a: not measured).")
    click.echo("  margin, per method (Algorithm 2, the 1.5 IQR fence, k-means): (worst healthy - best defective) / "
               "(fleet median - worst healthy) over the nodes; over 1 the nodes it calls defective sit clear of the "
               "healthy ones' spread, under 0 the two overlap; -: it called no node defective (no boundary).")
    nodes = result.nodes
    failed = nodes.filter(pl.col("last_failed"))
    click.echo(f"Latest runs: {failed.height} of {nodes.height} nodes failed; "
               f"{int(nodes['defective'].sum())} defective (failed >= {cfg.min_failed_runs} runs and >= "
               f"{fmt_pct(cfg.min_failed_share, 0)} of theirs).")
    for r in failed.sort("host").head(10).iter_rows(named=True):
        click.echo(f"  {r['host']:20} {r['last_run']}: {', '.join(r['last_failing'][:3])}"
                   + (" ..." if len(r["last_failing"]) > 3 else ""))
