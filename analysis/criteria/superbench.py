"""Criteria as SuperBench reads them (docs/user-tutorial/data-diagnosis.md),
and a reader of SuperBench rule files that applies them the way
`sb result diagnosis` does.

Export (`sb result diagnosis --data-file results.jsonl --rule-file rules.yaml
--baseline-file baseline.json`):
  - one `variance` rule per benchmark and threshold, category = the benchmark.
    For a single-value metric it is exact: similarity x/c < alpha (higher is
    better) is variance (x - c)/c < alpha - 1, and c/x < alpha (lower is
    better) is variance > 1/alpha - 1, with c the criterion as the baseline;
  - one `value` rule per benchmark for its pass/fail flags (x != pass);
  - metric patterns `<benchmark>/<escaped metric>(:\\d+)?$`: SuperBench splits
    the benchmark off at the first '/' and matches the rest with re.search, so
    the benchmark part stays literal and the metric part is escaped;
  - baseline.json keys are full metric names, one per rank the fleet reports
    (SuperBench looks the full name up first; how it strips a rank has
    changed between releases).
A per-step criterion is a distribution and SuperBench compares one value (the
run's summary, e.g. its mean step time): it goes out as its nearest threshold,
a variance rule against the median of the criterion's quantiles with the same
alpha, and criteria.json says so (`exact: false`). Missing results need no rule
of their own: a variance or value rule reports a metric a node lacks as
`<metric>_miss`.
"""
from __future__ import annotations

import ast
import json
import operator
import re
from pathlib import Path

import polars as pl
import yaml

from analysis.criteria.learn import JUDGED

_BENCH = re.compile(r"^[A-Za-z0-9_:-]+$")  # a benchmark name SuperBench can take literally
_RANK = re.compile(r":\d+$")


def metric_pattern(benchmark: str, metric: str) -> str:
    return f"{benchmark}/{re.escape(metric)}(:\\d+)?$"


def _fmt(x: float) -> str:
    return f"{x:.6g}"


def variance_criterion(direction: str, alpha: float) -> str:
    return f"lambda x:x<{_fmt(alpha - 1)}" if direction == "higher" else f"lambda x:x>{_fmt(1 / alpha - 1)}"


def exportable(criteria: pl.DataFrame) -> pl.DataFrame:
    """Criteria rows with how they go to SuperBench: superbench = variance | value | None, note."""
    single = pl.col("criterion").list.len() == 1
    ok_name = pl.col("benchmark").str.contains(_BENCH.pattern)
    return criteria.with_columns(
        superbench=pl.when(~ok_name).then(pl.lit(None, pl.Utf8))
        .when(pl.col("status") == "flag").then(pl.lit("value"))
        .when(pl.col("status").is_in(JUDGED) & (pl.col("criterion_value") != 0)).then(pl.lit("variance"))
        .otherwise(pl.lit(None, pl.Utf8)),
        superbench_exact=ok_name & ((pl.col("status") == "flag") | (pl.col("status").is_in(JUDGED) & single)),
        superbench_note=pl.when(~ok_name).then(pl.lit("benchmark name SuperBench cannot take literally"))
        .when(pl.col("status") == "flag").then(pl.lit("exact: value rule x != pass"))
        .when(pl.col("status").is_in(JUDGED) & (pl.col("criterion_value") == 0)).then(pl.lit(
            "not exported: a zero criterion cannot be a variance baseline"))
        .when(pl.col("status").is_in(JUDGED) & ~single).then(pl.lit(
            "nearest threshold: the criterion is a per-step distribution and SuperBench compares one value; "
            "the variance rule compares the run's summary with the median of the criterion's quantiles"))
        .when(pl.col("status").is_in(JUDGED)).then(pl.lit("exact: variance rule with the criterion as baseline"))
        .otherwise(pl.format("not exported: {}", pl.col("status"))))


def rules_and_baseline(criteria: pl.DataFrame, ranks: pl.DataFrame) -> tuple[dict, dict]:
    """criteria (one group) + ranks (benchmark, metric, rank: what the fleet reports) -> (rules, baseline)."""
    ex = exportable(criteria).filter(pl.col("superbench").is_not_null())
    rules, baseline = {}, {}
    by_rule: dict[tuple, list] = {}
    for r in ex.sort("benchmark", "metric").iter_rows(named=True):
        if r["superbench"] == "value":
            crit = f"lambda x:x!={_fmt(r['pass_value'])}"
        else:
            crit = variance_criterion(r["direction"], r["alpha"])
        by_rule.setdefault((r["benchmark"], r["superbench"], crit), []).append(r)
    for i, ((bench, function, crit), members) in enumerate(sorted(by_rule.items())):
        name = re.sub(r"[^A-Za-z0-9_]+", "_", f"goodput_{bench}_{function}_{i}")
        rules[name] = {"function": function, "criteria": crit, "categories": bench,
                       "metrics": [metric_pattern(bench, m["metric"]) for m in members]}
        if function == "variance":
            for m in members:
                keys = ranks.filter((pl.col("benchmark") == bench) & (pl.col("metric") == m["metric"]))["rank"]
                names = [f"{bench}/{m['metric']}" + (f":{k}" if k >= 0 else "") for k in sorted(keys.to_list())]
                for n in names or [f"{bench}/{m['metric']}"]:
                    baseline[n] = round(m["criterion_value"], 6)
    return {"version": "v0.12", "superbench": {"rules": rules}}, baseline


def write(out_dir: Path, criteria: pl.DataFrame, ranks: pl.DataFrame, meta: dict) -> dict[str, Path]:
    """criteria.json, rules.yaml and baseline.json (and per-group variants when there are groups)."""
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    paths = {}
    groups = sorted(criteria["group"].unique().to_list())
    for g in groups:
        suffix = "" if g == "all" else f"-{re.sub(r'[^A-Za-z0-9_.-]+', '_', g)}"
        rules, base = rules_and_baseline(criteria.filter(pl.col("group") == g), ranks)
        paths[f"rules{suffix}.yaml"] = out_dir / f"rules{suffix}.yaml"
        header = (f"# SuperBench diagnosis rules learned by goodput (criteria version {meta['version']}).\n"
                  f"# Use: sb result diagnosis --data-file results.jsonl --rule-file rules{suffix}.yaml "
                  f"--baseline-file baseline{suffix}.json\n")
        paths[f"rules{suffix}.yaml"].write_text(header + yaml.safe_dump(rules, sort_keys=False, width=1000))
        paths[f"baseline{suffix}.json"] = out_dir / f"baseline{suffix}.json"
        paths[f"baseline{suffix}.json"].write_text(json.dumps(base, indent=2, sort_keys=True) + "\n")
    paths["criteria.json"] = out_dir / "criteria.json"
    paths["criteria.json"].write_text(json.dumps(criteria_json(criteria, meta), indent=2) + "\n")
    return paths


def criteria_json(criteria: pl.DataFrame, meta: dict) -> dict:
    rows = []
    for r in exportable(criteria).sort("group", "benchmark", "metric").iter_rows(named=True):
        rows.append({
            "group": r["group"], "benchmark": r["benchmark"], "metric": r["metric"], "kind": r["kind"],
            "status": r["status"], "reason": r["reason"], "direction": r["direction"], "unit": r["unit"],
            "direction_guessed": bool(r["guessed_direction"]),
            "criterion_quantiles": [round(v, 6) for v in (r["criterion"] or [])],
            "criterion_value": None if r["criterion_value"] is None else round(r["criterion_value"], 6),
            "alpha": None if r["alpha"] is None else round(r["alpha"], 6),
            "threshold": None if r["threshold"] is None else round(r["threshold"], 6),
            "pass_value": r["pass_value"], "repeatability": None if r["repeatability"] is None else
            round(r["repeatability"], 6), "n_samples": r["n_samples"], "n_hosts": r["n_hosts"],
            "n_dropped": r["n_dropped"],
            "superbench": {"rule_function": r["superbench"], "exact": bool(r["superbench_exact"]) and
                           r["superbench"] is not None, "note": r["superbench_note"]}})
    return {**meta, "criteria": rows}


# --- reading SuperBench rule files (to check ours, and to replay SuperBench's own fixtures) ---

_OPS = {ast.Lt: operator.lt, ast.LtE: operator.le, ast.Gt: operator.gt, ast.GtE: operator.ge,
        ast.Eq: operator.eq, ast.NotEq: operator.ne}


class RuleFileError(ValueError):
    pass


def _number(node) -> float:
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
        v = _number(node.operand)
        return -v if isinstance(node.op, ast.USub) else v
    if isinstance(node, ast.Constant) and isinstance(node.value, (int, float)) and not isinstance(node.value, bool):
        return float(node.value)
    raise RuleFileError("criteria compare x with a number only")


def parse_criteria(text: str):
    """'lambda x:x<-0.05' -> a predicate, read with ast and never evaluated: one
    argument, a chain of comparisons of it with numbers (and/or of those)."""
    try:
        tree = ast.parse(str(text).strip(), mode="eval").body
    except SyntaxError as exc:
        raise RuleFileError(f"criteria {text!r} is not Python: {exc.msg}") from None
    if not isinstance(tree, ast.Lambda) or len(tree.args.args) != 1:
        raise RuleFileError(f"criteria {text!r} is not a one-argument lambda")
    arg = tree.args.args[0].arg

    def build(node):
        if isinstance(node, ast.BoolOp):
            parts = [build(v) for v in node.values]
            return (lambda x: all(p(x) for p in parts)) if isinstance(node.op, ast.And) else \
                (lambda x: any(p(x) for p in parts))
        if isinstance(node, ast.Compare) and isinstance(node.left, ast.Name) and node.left.id == arg \
                and len(node.ops) == 1 and type(node.ops[0]) in _OPS:
            op, bound = _OPS[type(node.ops[0])], _number(node.comparators[0])
            return lambda x: bool(op(x, bound))
        raise RuleFileError(f"criteria {text!r}: only comparisons of {arg} with numbers are read")
    return build(tree.body)


def diagnose(data: dict[str, dict[str, float]], rules_doc: dict, baseline: dict) -> dict[str, dict]:
    """node -> {categories, details} for the nodes that break a rule, as
    `sb result diagnosis` reports them (variance and value rules; misses as
    `<metric>_miss`)."""
    rules = (rules_doc or {}).get("superbench", {}).get("rules", {}) or {}
    columns = sorted({k for row in data.values() for k in row})
    by_bench: dict[str, list[str]] = {}
    for c in columns:
        by_bench.setdefault(c.split("/")[0], []).append(c)
    out: dict[str, dict] = {}
    for name, rule in rules.items():
        if rule.get("function") not in ("variance", "value"):
            continue
        crit = parse_criteria(rule["criteria"])
        metrics = set()
        for pattern in rule.get("metrics") or []:
            for c in by_bench.get(pattern.split("/")[0], []):
                if c == pattern or re.search(pattern, c):
                    metrics.add(c)
        for node, row in data.items():
            for m in sorted(metrics):
                if m not in row or row[m] is None:
                    hit, info = True, "_miss"
                elif rule["function"] == "variance":
                    b = baseline.get(m, baseline.get(_RANK.sub("", m)))
                    if b in (None, 0):
                        continue
                    var = (row[m] - b) / b
                    hit = crit(var)
                    info = f"(B/L: {b:.4f} VAL: {row[m]:.4f} VAR: {var * 100:.2f}% Rule:{rule['criteria']})"
                else:
                    hit = crit(row[m])
                    info = f"(VAL: {row[m]:.4f} Rule:{rule['criteria']})"
                if hit:
                    entry = out.setdefault(node, {"categories": set(), "details": []})
                    entry["categories"].add(rule["categories"])
                    entry["details"].append(m + info)
    return out


def data_from_samples(samples: pl.DataFrame) -> dict[str, dict[str, float]]:
    """Samples of one run -> {node: {"<benchmark>/<metric>[:rank]": value}}, the raw data `sb result
    diagnosis` reads: single values, and for per-step metrics their mean (SuperBench's summary value)."""
    keyed = samples.with_columns(key=pl.format("{}/{}", "benchmark", "metric")
                                + pl.when(pl.col("rank") >= 0).then(pl.format(":{}", pl.col("rank")))
                                .otherwise(pl.lit("")))
    out: dict[str, dict[str, float]] = {}
    for host, key, value in keyed.select("host", "key", "value").iter_rows():
        out.setdefault(host, {})[key] = value
    return out
