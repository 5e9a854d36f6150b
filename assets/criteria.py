"""Benchmark criteria learned from the fleet, the verdicts on every node, and
the files validation runs consume (SuperBench rules and baseline). analysis.criteria.run is imported in the
bodies: it loads scikit-learn, which a run that rebuilds nothing does not need."""
from pathlib import Path

from dagster import AssetCheckResult, MaterializeResult, MetadataValue, asset, asset_check

from assets.degrade import withheld_on_error
from assets.graph import writes
from assets.unchanged import replayed_while_unchanged, unless_unchanged
from assets.resources import CriteriaSettings, ReportSettings, Warehouse
from analysis.version import made_by


@asset(deps=["benchmark_results"], group_name="models",
       description="benchmark_criteria (Anubis Alg. 2 per metric), benchmark_verdicts (each node in each run), "
                   "benchmark_nodes (failed runs, defective) and criteria_evaluation (vs IQR and k-means).",
       metadata=writes("benchmark_criteria", "benchmark_verdicts", "benchmark_nodes", "criteria_evaluation"))
@unless_unchanged
@withheld_on_error
def benchmark_criteria(warehouse: Warehouse, criteria: CriteriaSettings) -> MaterializeResult:
    from analysis.criteria import run as criteria_run

    with warehouse.connect() as con:
        try:
            result = criteria_run.run(con, criteria.config(), criteria.metrics_file)
        except criteria_run.NoBenchmarks as exc:
            return MaterializeResult(metadata={"skipped": str(exc)})
    return MaterializeResult(metadata=criteria_run.summary(result))


# Not blocking: the blocklist and the lemon models read benchmark_criteria's verdicts and must not wait
# for a noisy benchmark to be fixed. criteria_exports enforces the floor itself (it writes nothing), and
# this check makes the run fail loudly until the benchmark is fixed, excluded or skipped.
@asset_check(asset=benchmark_criteria,
             description="Every benchmark's repeatability among healthy nodes is at least repeatability_floor: "
                         "a noisy benchmark must not produce criteria (criteria_exports then writes nothing).")
@replayed_while_unchanged
def benchmarks_repeatable(warehouse: Warehouse, criteria: CriteriaSettings) -> AssetCheckResult:
    from analysis.criteria import run as criteria_run

    with warehouse.connect() as con:
        try:
            _, evaluation = criteria_run.latest(con)
        except criteria_run.NoBenchmarks:
            return AssetCheckResult(passed=True, metadata={"benchmarks": 0})
    noisy = criteria_run.noisy_benchmarks(evaluation, criteria.repeatability_floor)
    listed = ", ".join(f"{b} {r:.3f}" for _, b, r in noisy.iter_rows())
    return AssetCheckResult(passed=noisy.height == 0 or criteria.skip_noisy,
                            description=f"under the floor {criteria.repeatability_floor}: {listed}" if listed else None,
                            metadata={"benchmarks": evaluation.height, "noisy": MetadataValue.text(listed or "none")})


@asset(deps=[benchmark_criteria], group_name="models",
       description="OUT/exports/criteria/: criteria.json (versioned), rules.yaml and baseline.json for "
                   "`sb result diagnosis`.")
@unless_unchanged
@withheld_on_error
def criteria_exports(warehouse: Warehouse, criteria: CriteriaSettings,
                     report_settings: ReportSettings) -> MaterializeResult:
    from analysis.criteria import run as criteria_run

    with warehouse.connect() as con:
        try:
            paths = criteria_run.export(con, Path(report_settings.out_dir) / "exports" / "criteria",
                                        made_by(warehouse.db_path), criteria.config(), criteria.skip_noisy)
        except criteria_run.NoBenchmarks as exc:  # (a noisy benchmark raises: the exports are withheld)
            return MaterializeResult(metadata={"skipped": str(exc)})
    return MaterializeResult(metadata={name: MetadataValue.path(str(p)) for name, p in paths.items()})
