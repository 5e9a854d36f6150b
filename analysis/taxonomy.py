"""The failure taxonomy as data: load taxonomy/rules.yaml and xids.yaml, merge
an operator's override file, validate, and return the rules as a frame that
DuckDB joins against node_events. Nothing here evaluates code from the files."""
from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

import duckdb
import polars as pl
import yaml

TAXONOMY_DIR = Path(__file__).resolve().parents[1] / "taxonomy"
SEVERITIES = ("critical", "warning", "info")
DOMAINS = ("user", "system_software", "hardware", "infrastructure", "network")
RULE_KEYS = {"id", "cause", "severity", "transient", "priority", "match", "count", "distributed", "description"}
MATCH_KEYS = {"source", "kind", "code", "severity", "message"}
XID_KEYS = {"cause", "severity", "transient", "priority"}
# node_events.source values a rule can name ("app": application/NCCL logs fed in as events)
SOURCES = {"kernel", "switch", "health", "slurm", "app"}
RULE_SCHEMA = {
    "rule_id": pl.Utf8, "cause": pl.Utf8, "domain": pl.Utf8, "severity": pl.Utf8, "transient": pl.Boolean,
    "priority": pl.Int32, "distributed": pl.Boolean, "m_source": pl.List(pl.Utf8), "m_kind": pl.List(pl.Utf8),
    "m_code": pl.List(pl.Utf8), "m_severity": pl.List(pl.Utf8), "m_message": pl.Utf8, "count_n": pl.Int32,
    "count_window_s": pl.Int64, "count_per": pl.Utf8,
}


class TaxonomyError(ValueError):
    """A rules file that cannot be used, with the reason and the entry."""


@dataclass
class Taxonomy:
    rules: pl.DataFrame  # one row per rule (XIDs included), RULE_SCHEMA
    causes: dict[str, dict]  # cause id -> {domain, description}
    xids: dict[int, dict]  # code -> merged XID entry
    before_s: int
    after_s: int


def _as_list(value) -> list[str] | None:
    if value is None:
        return None
    return [str(v) for v in (value if isinstance(value, list) else [value])]


def _read(path: Path) -> dict:
    try:
        data = yaml.safe_load(Path(path).read_text()) or {}
    except (OSError, yaml.YAMLError) as exc:
        raise TaxonomyError(f"cannot read {path}: {exc}") from None
    if not isinstance(data, dict):
        raise TaxonomyError(f"{path}: expected a mapping at the top")
    return data


def _rule_row(rule: dict, causes: dict, where: str) -> dict:
    unknown = set(rule) - RULE_KEYS
    if unknown or "id" not in rule:
        raise TaxonomyError(f"{where}: rule {rule.get('id', '?')}: unknown keys {sorted(unknown)} or no id")
    rid = str(rule["id"])
    if rule.get("cause") not in causes:
        raise TaxonomyError(f"{where}: rule {rid}: unknown cause {rule.get('cause')!r} (known: {', '.join(causes)})")
    if rule.get("severity") not in SEVERITIES:
        raise TaxonomyError(f"{where}: rule {rid}: severity must be one of {SEVERITIES}")
    match = rule.get("match") or {}
    if not isinstance(match, dict) or set(match) - MATCH_KEYS or not match:
        raise TaxonomyError(f"{where}: rule {rid}: match needs some of {sorted(MATCH_KEYS)}")
    unknown_sources = set(_as_list(match.get("source")) or []) - SOURCES
    if unknown_sources:
        raise TaxonomyError(f"{where}: rule {rid}: unknown source {sorted(unknown_sources)} (known: {sorted(SOURCES)})")
    message = match.get("message")
    if message is not None:
        if re.search(r"\(\?[=!<]", message):
            raise TaxonomyError(f"{where}: rule {rid}: look-around is not supported in message patterns")
        try:
            re.compile(message)
            duckdb.execute("SELECT regexp_matches('', ?)", [message]).fetchall()  # DuckDB runs it with RE2
        except (re.error, duckdb.Error) as exc:
            raise TaxonomyError(f"{where}: rule {rid}: bad message pattern: {str(exc).splitlines()[0]}") from None
    count = rule.get("count") or {}
    if count and (int(count.get("n", 0)) < 2 or count.get("per", "host") not in ("host", "device")):
        raise TaxonomyError(f"{where}: rule {rid}: count needs n >= 2 and per: host|device")
    return {
        "rule_id": rid, "cause": rule["cause"], "domain": causes[rule["cause"]]["domain"],
        "severity": rule["severity"], "transient": bool(rule.get("transient", True)),
        "priority": int(rule.get("priority", 50)), "distributed": bool(rule.get("distributed", False)),
        "m_source": _as_list(match.get("source")), "m_kind": _as_list(match.get("kind")),
        "m_code": _as_list(match.get("code")),
        "m_severity": [s.lower() for s in _as_list(match.get("severity"))] if match.get("severity") else None,
        "m_message": message, "count_n": int(count["n"]) if count else None,
        "count_window_s": int(float(count.get("window_minutes", 10)) * 60) if count else None,
        "count_per": count.get("per", "host") if count else None,
    }


def load(override: Path | str | None = None, base_dir: Path = TAXONOMY_DIR) -> Taxonomy:
    """The shipped taxonomy, with ``override`` (an operator's file) merged over it."""
    base = _read(base_dir / "rules.yaml")
    xid_file = _read(base_dir / "xids.yaml")
    extra = _read(Path(override)) if override else {}
    unknown = set(extra) - {"rules", "xid_overrides", "windows", "causes", "version"}
    if unknown:
        raise TaxonomyError(f"{override}: unknown keys {sorted(unknown)}")
    causes = {**base["causes"], **(extra.get("causes") or {})}
    for cid, spec in causes.items():
        if spec.get("domain") not in DOMAINS:
            raise TaxonomyError(f"cause {cid}: domain must be one of {DOMAINS}")
    windows = {**base.get("windows", {}), **(extra.get("windows") or {})}
    for key in ("before_minutes", "after_minutes"):
        if not isinstance(windows.get(key, 0), (int, float)) or windows.get(key, 0) < 0:
            raise TaxonomyError(f"windows.{key} must be a number of minutes >= 0, not {windows.get(key)!r}")
    xids = {int(x["code"]): dict(x) for x in xid_file["xids"]}
    xid_where = {code: "xids.yaml" for code in xids}
    for source, overrides in (("rules.yaml", base.get("xid_overrides")), (str(override), extra.get("xid_overrides"))):
        for code, fields in (overrides or {}).items():
            if int(code) not in xids:
                raise TaxonomyError(f"{source}: xid_overrides {code}: no such XID (the table covers 1-{max(xids)})")
            if set(fields) - XID_KEYS:
                raise TaxonomyError(f"{source}: xid_overrides {code}: unknown keys {sorted(set(fields) - XID_KEYS)}"
                                    f" (allowed: {sorted(XID_KEYS)})")
            xids[int(code)].update(fields)
            xid_where[int(code)] = f"{source} (xid_overrides {code})"
    prio = base.get("xid_priority", {})
    rows = {}
    for code, x in sorted(xids.items()):
        rule = {"id": f"xid-{code}", "cause": x["cause"], "severity": x["severity"], "transient": x["transient"],
                "priority": x.get("priority", prio.get(x["severity"], 50)),
                "match": {"source": "kernel", "kind": "xid", "code": [str(code)]}}
        rows[rule["id"]] = _rule_row(rule, causes, xid_where[code])
    for where, doc in (("rules.yaml", base), (str(override), extra)):
        for rule in doc.get("rules") or []:
            row = _rule_row(rule, causes, where)
            rows[row["rule_id"]] = row  # an operator's rule replaces the shipped one with its id
    return Taxonomy(pl.DataFrame(list(rows.values()), schema=RULE_SCHEMA), causes, xids,
                    int(float(windows.get("before_minutes", 10)) * 60), int(float(windows.get("after_minutes", 5)) * 60))
