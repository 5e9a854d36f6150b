"""Learn criteria from the warehouse's validation runs, judge every node, store the tables."""
from __future__ import annotations

import hashlib
from dataclasses import dataclass

import duckdb
import polars as pl

from analysis import sql
from analysis.criteria import catalog, evaluation, learn, samples, verdicts
from analysis.criteria.learn import CriteriaConfig


class NoBenchmarks(ValueError):
    """The warehouse holds no benchmark results to learn from."""


@dataclass
class CriteriaRun:
    version: str
    trained_from: object
    trained_to: object
    criteria: pl.DataFrame
    verdicts: pl.DataFrame
    nodes: pl.DataFrame
    per_metric: pl.DataFrame
    per_benchmark: pl.DataFrame
    fleet: int


def version_of(criteria: pl.DataFrame, trained_to) -> str:
    """The training window's end plus a digest of what was learned: a rerun on the same data gives the same version."""
    body = criteria.select("group", "benchmark", "metric", "status", "criterion", "alpha").sort(
        "group", "benchmark", "metric").write_json()
    return f"{trained_to:%Y%m%dT%H%M%S}-{hashlib.sha256(body.encode()).hexdigest()[:8]}"


def compute(smp: pl.DataFrame, cfg: CriteriaConfig = CriteriaConfig(), metrics_file=None,
            groups: pl.DataFrame | None = None, progress=None) -> CriteriaRun:
    """Pure: samples (load_samples) -> criteria, verdicts, node standing, evaluation."""
    if smp.height == 0:
        raise NoBenchmarks("no benchmark results in the warehouse: put SuperBench results (results-summary.jsonl "
                           "or the wide CSV) under benchmarks/ and run `goodput run`")
    smp = samples.with_groups(smp, groups)
    names = smp.select(pl.format("{}/{}", "benchmark", "metric")).to_series().unique().sort().to_list()
    crit = learn.learn(smp, catalog.classify(names, catalog.load(metrics_file)), cfg, progress)
    trained_from, trained_to = smp["run_time"].min(), smp["run_time"].max()
    version = version_of(crit, trained_to)
    crit = crit.with_columns(version=pl.lit(version), trained_from=pl.lit(trained_from),
                             trained_to=pl.lit(trained_to))
    judged = verdicts.check(smp, crit, cfg)
    crit = evaluation.healthy_repeatability(smp, crit, judged)
    nodes = verdicts.node_status(judged, cfg)
    per_metric, per_bench = evaluation.evaluate(smp, crit)
    fleet = smp["host"].n_unique()
    return CriteriaRun(version, trained_from, trained_to, crit, judged.with_columns(version=pl.lit(version)), nodes,
                       per_metric, per_bench.with_columns(version=pl.lit(version)), fleet)


def noisy_benchmarks(per_benchmark: pl.DataFrame, floor: float) -> pl.DataFrame:
    """Benchmarks whose repeatability among healthy nodes is under the floor: they must not produce criteria."""
    return per_benchmark.filter(pl.col("repeatability") < floor).select("group", "benchmark", "repeatability")


def load_samples(con: duckdb.DuckDBPyConnection, cfg: CriteriaConfig, batch_rows: int = 1_000_000) -> pl.DataFrame:
    """The window's samples, built in DuckDB and fetched in batches whose text turns categorical at once
    (a year of weekly runs on 2,000 nodes is ~10^7 samples; as plain strings they would take gigabytes)."""
    params = {"window_days": cfg.window_days, "grid": samples.grid(cfg.steps_q)}
    reader = con.sql(sql.load("criteria/samples"), params=params).to_arrow_reader(batch_rows)
    parts = [samples.compact(pl.from_arrow(batch)) for batch in reader]
    return pl.concat(parts) if parts else samples.compact(pl.from_arrow(reader.schema.empty_table()))


def host_groups(con: duckdb.DuckDBPyConnection, smp: pl.DataFrame, cfg: CriteriaConfig) -> pl.DataFrame | None:
    """Per-partition criteria where the data says partitions split the fleet (sql/criteria/host_groups.sql)
    and every such group has at least min_hosts benchmarked nodes; else None (one fleet-wide criterion)."""
    if not sql.table_exists(con, "jobs"):
        return None
    groups = sql.query(con, "criteria/host_groups")
    benched = groups.join(smp.select(pl.col("host").cast(pl.Utf8)).unique(), on="host")
    sizes = benched.group_by("group").len()
    if sizes.height < 2 or sizes["len"].min() < cfg.min_hosts:
        return None
    return groups


def run(con: duckdb.DuckDBPyConnection, cfg: CriteriaConfig = CriteriaConfig(), metrics_file=None,
        progress=None) -> CriteriaRun:
    smp = load_samples(con, cfg)
    result = compute(smp, cfg, metrics_file, groups=host_groups(con, smp, cfg), progress=progress)
    sql.run_staged(con, {"staged_criteria": result.criteria, "staged_verdicts": result.verdicts,
                         "staged_nodes": result.nodes, "staged_evaluation": result.per_benchmark},
                   [("schema/benchmark_criteria", None), ("schema/benchmark_verdicts", None),
                    ("schema/criteria_evaluation", None), ("criteria/store_benchmark_criteria", {"version": result.version})])
    return result


def summary(result: CriteriaRun) -> dict:
    status = dict(result.criteria.group_by("status").len().iter_rows())
    return {"version": result.version, "fleet": result.fleet, "metrics": result.criteria.height,
            **{f"metrics_{k}": int(v) for k, v in sorted(status.items())},
            "runs": result.verdicts["run_id"].n_unique(),
            "failed_latest_run": int(result.nodes.filter(pl.col("last_failed")).height),
            "defective_nodes": int(result.nodes["defective"].sum())}


class NoisyBenchmarks(ValueError):
    """A benchmark's repeatability is under the floor: its criteria must not be exported."""


def latest(con: duckdb.DuckDBPyConnection) -> tuple[pl.DataFrame, pl.DataFrame]:
    """(criteria, per-benchmark evaluation) of the latest version; NoBenchmarks when there is none."""
    try:
        crit = sql.query(con, "criteria/latest")
    except duckdb.CatalogException:
        crit = pl.DataFrame()
    if crit.height == 0:
        raise NoBenchmarks("no benchmark criteria in the warehouse yet: run `goodput criteria` (or `goodput run`)")
    ev = con.sql("SELECT * FROM criteria_evaluation WHERE version = ? ORDER BY \"group\", benchmark",
                 params=[crit["version"][0]]).pl()
    return crit, ev


def export(con: duckdb.DuckDBPyConnection, out_dir, made_by: str, cfg: CriteriaConfig = CriteriaConfig(),
           skip_noisy: bool = False) -> dict:
    """OUT/exports/criteria/: criteria.json, rules.yaml, baseline.json from the
    latest criteria. A benchmark under the repeatability floor blocks it
    (NoisyBenchmarks), or with ``skip_noisy`` is left out and named in criteria.json."""
    from datetime import datetime, timezone

    from analysis.criteria import superbench

    crit, ev = latest(con)
    noisy = noisy_benchmarks(ev, cfg.repeatability_floor)
    if noisy.height and not skip_noisy:
        names = ", ".join(f"{b} ({r:.3f})" for _, b, r in noisy.iter_rows())
        raise NoisyBenchmarks(f"repeatability under the floor {cfg.repeatability_floor}: {names}; a noisy "
                              "benchmark must not produce criteria: fix or re-tune it, mark its metrics `kind: info` "
                              "in a metrics file, lower repeatability_floor, or export without it (--skip-noisy)")
    if noisy.height:
        crit = crit.join(noisy.select("group", "benchmark"), on=["group", "benchmark"], how="anti")
    ranks = sql.query(con, "criteria/ranks")
    meta = {"version": crit["version"][0], "made_by": made_by,
            "generated_at": datetime.now(timezone.utc).isoformat(timespec="seconds").replace("+00:00", "Z"),
            "training_window": {"from": crit["trained_from"][0].isoformat() + "Z",
                                "to": crit["trained_to"][0].isoformat() + "Z"},
            "fleet_size": int(crit["n_hosts"].max()), "alpha": cfg.alpha,
            "repeatability_floor": cfg.repeatability_floor,
            "left_out_noisy_benchmarks": [{"group": g, "benchmark": b, "repeatability": round(r, 4)}
                                          for g, b, r in noisy.iter_rows()],
            "benchmarks": [{k: (round(v, 4) if isinstance(v, float) else v) for k, v in r.items() if k != "version"}
                           for r in ev.iter_rows(named=True)]}
    return superbench.write(out_dir, crit, ranks, meta)
