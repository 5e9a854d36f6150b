"""The failure taxonomy as data: load taxonomy/rules.yaml and xids.yaml, merge
an operator's override file, validate, and return the rules as a frame that
DuckDB joins against node_events. Nothing here evaluates code from the files.

An override file is untrusted input: it is size-capped and read without YAML
aliases (a "billion laughs" file expands to gigabytes through them), and every
value is type-checked, so a bad file is refused with one line naming the file
and the key, never a traceback."""
from __future__ import annotations

import copy
import math
import re
from dataclasses import dataclass
from pathlib import Path

import duckdb
import polars as pl
import yaml

from analysis import package_files
from analysis.sources import event_sources

TAXONOMY_DIR = package_files.taxonomy_dir()
SEVERITIES = ("critical", "warning", "info")
DOMAINS = ("user", "system_software", "hardware", "infrastructure", "network")
TOP_KEYS = {"rules", "xid_overrides", "windows", "causes", "version", "reasons"}
RULE_KEYS = {"id", "cause", "severity", "transient", "priority", "match", "count", "distributed", "description"}
MATCH_KEYS = {"source", "kind", "code", "severity", "message"}
COUNT_KEYS = {"n", "window_minutes", "per"}
XID_KEYS = {"cause", "severity", "transient", "priority"}
CAUSE_KEYS = {"domain", "description", "label", "component", "family", "planned"}  # label: the readable name reports show
# the part of the system a cause is in, as Llama 3's interruption table groups them (docs/methods.md)
COMPONENTS = ("GPU", "Host", "Network", "Dependency", "Maintenance", "Software", "Facility", "User", "Unknown")
WINDOW_KEYS = {"before_minutes", "after_minutes", "xid_twin_minutes"}
REASON_KEYS = {"id", "cause", "severity", "transient", "priority", "pattern", "description"}
# The records whose free text the reason rules read (taxonomy/reasons.yaml): Slurm's drain/down reasons,
# repair tickets, failing health checks. A reason rule outranks the generic health rules (a check no code rule
# knows, any message naming a GPU) but not a check known by its code (rules.yaml, priority 47).
REASON_SOURCES = ["slurm", "ticket", "health"]
REASON_PRIORITY = 46
# The sources whose kind 'xid' rows are NVIDIA XIDs, classified by the XID table: dmesg lines (kernel/) and the
# XIDs Kubernetes health agents report (node_health/: NVSentinel's errorCode), so both get the same cause.
XID_SOURCES = ("kernel", "node_health")
# NVSentinel's syslog-health-monitor (and gpud) read the kernel log kernel/ holds: where both are collected, a
# node_health XID with a kernel twin (same host and code, the same GPU when both name one, within
# windows.xid_twin_minutes) is the same fault, classified once, from the kernel line (sql/derive/stage_xid_twins.sql).
XID_KEPT, XID_TWIN = XID_SOURCES
# Bounds on an override file: far above any real one, low enough that a hostile one costs little.
MAX_FILE_BYTES = 1 << 20
MAX_NESTING = 32
MAX_RULES = 2000
MAX_PATTERN_CHARS = 4096
MAX_MINUTES = 7 * 24 * 60
RULE_SCHEMA = {
    "rule_id": pl.Utf8, "cause": pl.Utf8, "domain": pl.Utf8, "severity": pl.Utf8, "transient": pl.Boolean,
    "priority": pl.Int32, "distributed": pl.Boolean, "m_source": pl.List(pl.Utf8), "m_kind": pl.List(pl.Utf8),
    "m_code": pl.List(pl.Utf8), "m_severity": pl.List(pl.Utf8), "m_message": pl.Utf8, "count_n": pl.Int32,
    "count_window_s": pl.Int64, "count_per": pl.Utf8,
    "reason_order": pl.Int32,  # a reason rule's place in the list (the first that matches a text wins), else NULL
}


def cause_label(cause: str, labels: dict[str, str]) -> str:
    """The words for a cause: its label, else the id with spaces (a cause no rules file names, e.g. preempted)."""
    return labels.get(cause) or cause.replace("_", " ")


class TaxonomyError(ValueError):
    """A rules file that cannot be used, with the reason and the entry."""


@dataclass
class Taxonomy:
    rules: pl.DataFrame  # one row per rule (XIDs included), RULE_SCHEMA
    causes: dict[str, dict]  # cause id -> {domain, description, label}
    xids: dict[int, dict]  # code -> merged XID entry
    before_s: int
    after_s: int
    twin_s: int = 300  # windows.xid_twin_minutes: how far apart a kernel XID and its node_health copy may be

    def labels(self) -> dict[str, str]:
        """cause id -> the words a report shows (see cause_label)."""
        return {c: str(spec.get("label") or cause_label(c, {})) for c, spec in self.causes.items()}


def _what(value) -> str:
    """How a wrong value is named in an error: its YAML type and a short excerpt."""
    kind = ("nothing" if value is None else "true/false" if isinstance(value, bool)
            else "a number" if isinstance(value, (int, float)) else "a string" if isinstance(value, str)
            else "a list" if isinstance(value, list) else "a mapping" if isinstance(value, dict)
            else f"a {type(value).__name__}")
    if isinstance(value, (list, dict)):
        return kind
    text = repr(value)
    return f"{kind} ({text[:40] + '...' if len(text) > 40 else text})"


def _mapping(value, where: str, keys: set[str] | None = None) -> dict:
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise TaxonomyError(f"{where}: must be a mapping (key: value), not {_what(value)}")
    unknown = sorted(str(k) for k in value if k not in (keys or value))
    if unknown:
        raise TaxonomyError(f"{where}: unknown keys {unknown} (allowed: {sorted(keys)})")
    return value


def _strings(value, where: str, numbers: bool = False) -> list[str] | None:
    """A string or a list of strings (numbers too where codes are numeric: XIDs)."""
    if value is None:
        return None
    items = value if isinstance(value, list) else [value]
    allowed = (str, int) if numbers else (str,)
    for v in items:
        if isinstance(v, bool) or not isinstance(v, allowed):
            raise TaxonomyError(f"{where}: must be a string or a list of strings, not {_what(v)}")
    if not items:
        raise TaxonomyError(f"{where}: is an empty list, which matches nothing (leave the key out to match any)")
    return [str(v) for v in items]


def _integer(value, where: str, lo: int, hi: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not lo <= value <= hi:
        raise TaxonomyError(f"{where}: must be a whole number from {lo} to {hi}, not {_what(value)}")
    return value


def _minutes(value, where: str, zero_ok: bool) -> float:
    if (isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value)
            or not (0 if zero_ok else 1e-9) <= value <= MAX_MINUTES):
        bound = ">= 0" if zero_ok else "> 0"
        raise TaxonomyError(f"{where}: must be a number of minutes {bound} and at most {MAX_MINUTES}, not {_what(value)}")
    return value


def _flag(value, where: str, default: bool) -> bool:
    if value is None:
        return default
    if not isinstance(value, bool):
        raise TaxonomyError(f"{where}: must be true or false, not {_what(value)}")
    return value


def _choice(value, where: str, choices) -> str:
    if not isinstance(value, str) or value not in choices:
        raise TaxonomyError(f"{where}: must be one of {', '.join(choices)}, not {_what(value)}")
    return value


def _check_events(text: str, path: Path) -> None:
    """Refuse aliases and deep nesting from the event stream, before anything is built."""
    depth = 0
    for event in yaml.parse(text, Loader=yaml.CSafeLoader):
        line = event.start_mark.line + 1 if event.start_mark else "?"
        if isinstance(event, yaml.AliasEvent):
            raise TaxonomyError(f"{path}: line {line}: YAML aliases (*name) are not allowed in a rules file;"
                                " write the value out")
        if isinstance(event, (yaml.MappingStartEvent, yaml.SequenceStartEvent)):
            depth += 1
            if depth > MAX_NESTING:
                raise TaxonomyError(f"{path}: line {line}: nested more than {MAX_NESTING} levels deep")
        elif isinstance(event, (yaml.MappingEndEvent, yaml.SequenceEndEvent)):
            depth -= 1


def _read(path: Path, keys: set[str] | None = None) -> dict:
    path = Path(path)
    try:
        with path.open("rb") as fh:
            raw = fh.read(MAX_FILE_BYTES + 1)
    except OSError as exc:
        raise TaxonomyError(f"cannot read {path}: {exc.strerror or exc}") from None
    if len(raw) > MAX_FILE_BYTES:
        raise TaxonomyError(f"{path}: larger than {MAX_FILE_BYTES:,} bytes; a rules file is a few KB")
    try:
        text = raw.decode("utf-8")
        _check_events(text, path)
        data = yaml.load(text, Loader=yaml.CSafeLoader)
    except UnicodeDecodeError:
        raise TaxonomyError(f"{path}: not UTF-8 text") from None
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        at = f"line {mark.line + 1}, column {mark.column + 1}: " if mark else ""
        raise TaxonomyError(f"{path}: not valid YAML: {at}{exc.problem or exc.context}") from None
    except yaml.YAMLError as exc:
        raise TaxonomyError(f"{path}: not valid YAML: {' '.join(str(exc).split())}") from None
    return _mapping(data, str(path), keys)


def _pattern(message, where: str) -> str | None:
    if message is None:
        return None
    if not isinstance(message, str) or not message or len(message) > MAX_PATTERN_CHARS:
        raise TaxonomyError(f"{where}: must be a regular expression (a non-empty string of at most"
                            f" {MAX_PATTERN_CHARS} characters), not {_what(message)}")
    if re.search(r"\(\?[=!<]", message):
        raise TaxonomyError(f"{where}: look-around is not supported in message patterns (RE2 syntax)")
    try:  # DuckDB runs it with RE2: compile it there, as a parameter
        duckdb.execute("SELECT regexp_matches('', ?)", [message]).fetchall()
    except duckdb.Error as exc:
        raise TaxonomyError(f"{where}: bad message pattern: {str(exc).splitlines()[0]}") from None
    return message


def _rule_row(rule, causes: dict, where: str) -> dict:
    rule = _mapping(rule, f"{where}: a rule", RULE_KEYS)
    if isinstance(rule.get("id"), bool) or not isinstance(rule.get("id"), (str, int)):
        raise TaxonomyError(f"{where}: a rule: id must be a string, not {_what(rule.get('id'))}")
    rid = str(rule["id"])
    at = f"{where}: rule {rid}"
    if rule.get("cause") not in causes:
        raise TaxonomyError(f"{at}: cause: unknown cause {_what(rule.get('cause'))} (known: {', '.join(causes)})")
    severity = _choice(rule.get("severity"), f"{at}: severity", SEVERITIES)
    if not isinstance(rule.get("description", ""), str):
        raise TaxonomyError(f"{at}: description: must be a string, not {_what(rule['description'])}")
    match = _mapping(rule.get("match"), f"{at}: match", MATCH_KEYS)
    if not match:
        raise TaxonomyError(f"{at}: match needs some of {sorted(MATCH_KEYS)}")
    sources = _strings(match.get("source"), f"{at}: match.source")
    known = set(event_sources())  # node_events.source values a rule can name (analysis/sources.py)
    if set(sources or []) - known:
        raise TaxonomyError(f"{at}: match.source: unknown source {sorted(set(sources) - known)}"
                            f" (known: {sorted(known)})")
    event_severity = _strings(match.get("severity"), f"{at}: match.severity")
    count = _mapping(rule.get("count"), f"{at}: count", COUNT_KEYS)
    if rule.get("count") is not None and "n" not in count:
        raise TaxonomyError(f"{at}: count needs n (how many events fire the rule)")
    return {
        "rule_id": rid, "cause": rule["cause"], "domain": causes[rule["cause"]]["domain"], "severity": severity,
        "transient": _flag(rule.get("transient"), f"{at}: transient", True),
        "priority": _integer(rule.get("priority", 50), f"{at}: priority", -1000, 1000),
        "distributed": _flag(rule.get("distributed"), f"{at}: distributed", False),
        "m_source": sources, "m_kind": _strings(match.get("kind"), f"{at}: match.kind"),
        "m_code": _strings(match.get("code"), f"{at}: match.code", numbers=True),
        "m_severity": [s.lower() for s in event_severity] if event_severity else None,
        "m_message": _pattern(match.get("message"), f"{at}: match.message"),
        "count_n": _integer(count["n"], f"{at}: count.n", 2, 1_000_000) if count else None,
        "count_window_s": int(_minutes(count.get("window_minutes", 10), f"{at}: count.window_minutes", False) * 60)
        if count else None,
        "count_per": _choice(count.get("per", "host"), f"{at}: count.per", ("host", "device")) if count else None,
        "reason_order": None,
    }


def _reason_rows(docs, causes: dict) -> list[dict]:
    """The reason rules in matching order: an override's new entries first (tried before the shipped ones), an
    entry with a shipped id in the shipped one's place."""
    shipped, added = [], []
    for where, doc in docs:
        entries = doc.get("reasons") or []
        if not isinstance(entries, list) or len(entries) > MAX_RULES:
            raise TaxonomyError(f"{where}: reasons: must be a list of at most {MAX_RULES} entries, not {_what(entries)}")
        for entry in entries:
            entry = _mapping(entry, f"{where}: a reason", REASON_KEYS)
            if not isinstance(entry.get("pattern"), str) or not entry["pattern"]:
                raise TaxonomyError(f"{where}: reason {entry.get('id')}: pattern must be a regular expression")
            rule = {"id": f"reason-{entry.get('id')}", "cause": entry.get("cause"), "severity": entry.get("severity"),
                    "transient": entry.get("transient", entry.get("severity") != "critical"),
                    "priority": entry.get("priority", REASON_PRIORITY),
                    "description": entry.get("description", ""),
                    "match": {"source": REASON_SOURCES, "message": "(?i)" + entry["pattern"]}}
            if not isinstance(entry.get("id"), (str, int)) or isinstance(entry.get("id"), bool):
                raise TaxonomyError(f"{where}: a reason: id must be a string, not {_what(entry.get('id'))}")
            row = _rule_row(rule, causes, where)
            ids = [r["rule_id"] for r in shipped]
            if row["rule_id"] in ids:
                shipped[ids.index(row["rule_id"])] = row
            elif where == "reasons.yaml":
                shipped.append(row)
            else:
                added.append(row)
    rows = added + shipped
    for i, row in enumerate(rows):
        row["reason_order"] = i
    return rows


def _causes(doc: dict, where: str) -> dict:
    out = {}
    for cid, spec in _mapping(doc.get("causes"), f"{where}: causes").items():
        spec = _mapping(spec, f"{where}: causes.{cid}", CAUSE_KEYS)
        _choice(spec.get("domain"), f"{where}: causes.{cid}.domain", DOMAINS)
        spec = dict(spec)
        spec["component"] = _choice(spec.get("component", "Unknown"), f"{where}: causes.{cid}.component", COMPONENTS)
        family = spec.get("family", str(cid))
        if not isinstance(family, str) or not family:
            raise TaxonomyError(f"{where}: causes.{cid}.family: must be a string, not {_what(family)}")
        spec["family"] = family
        spec["planned"] = _flag(spec.get("planned"), f"{where}: causes.{cid}.planned", False)
        out[str(cid)] = spec
    return out


def _xid_code(code, where: str, xids: dict) -> int:
    try:
        number = int(code) if not isinstance(code, bool) else None
    except (TypeError, ValueError):
        number = None
    if number not in xids:
        raise TaxonomyError(f"{where}: xid_overrides {code}: no such XID (the table covers 1-{max(xids)})")
    return number


def _stamp(path: Path) -> tuple | None:
    try:
        st = path.stat()
    except OSError:
        return None  # unreadable: _read says why
    return str(path.resolve()), st.st_size, st.st_mtime_ns


_LOADED: dict[tuple, Taxonomy] = {}


def load(override: Path | str | None = None, base_dir: Path = TAXONOMY_DIR) -> Taxonomy:
    """The shipped taxonomy, with ``override`` (an operator's file) merged over it. A run loads it in several
    steps, and validating every pattern is most of a load: the result is kept while the files stay as they
    were (size and mtime), and each caller gets its own copy."""
    files = [base_dir / name for name in ("rules.yaml", "xids.yaml", "reasons.yaml")] + ([Path(override)] if override else [])
    key = tuple(_stamp(f) for f in files)
    if None not in key and key in _LOADED:
        return copy.deepcopy(_LOADED[key])
    taxonomy = _load(override, base_dir)
    if None not in key:
        _LOADED.clear()  # one set of rule files at a time: an edited file replaces its old entry
        _LOADED[key] = copy.deepcopy(taxonomy)
    return taxonomy


def _load(override: Path | str | None, base_dir: Path) -> Taxonomy:
    base = _read(base_dir / "rules.yaml")
    xid_file = _read(base_dir / "xids.yaml")
    reason_file = _read(base_dir / "reasons.yaml")
    extra = _read(Path(override), TOP_KEYS) if override else {}
    docs = (("rules.yaml", base), (str(override), extra))
    causes = {**_causes(base, "rules.yaml"), **_causes(extra, str(override))}
    windows = {}
    for where, doc in docs:
        for key, value in _mapping(doc.get("windows"), f"{where}: windows", WINDOW_KEYS).items():
            windows[key] = _minutes(value, f"{where}: windows.{key}", True)
    xids = {int(x["code"]): dict(x) for x in xid_file["xids"]}
    xid_where = {code: "xids.yaml" for code in xids}
    for where, doc in docs:
        for code, fields in _mapping(doc.get("xid_overrides"), f"{where}: xid_overrides").items():
            number = _xid_code(code, where, xids)
            xids[number].update(_mapping(fields, f"{where}: xid_overrides {code}", XID_KEYS))
            xid_where[number] = f"{where} (xid_overrides {code})"
    prio = base.get("xid_priority", {})
    rows = {}
    for code, x in sorted(xids.items()):
        rule = {"id": f"xid-{code}", "cause": x["cause"], "severity": x["severity"], "transient": x["transient"],
                "priority": x.get("priority", prio.get(x["severity"], 50)),
                "match": {"source": list(XID_SOURCES), "kind": "xid", "code": [str(code)]}}
        rows[rule["id"]] = _rule_row(rule, causes, xid_where[code])
    for where, doc in docs:
        rules = doc.get("rules") or []
        if not isinstance(rules, list) or len(rules) > MAX_RULES:
            raise TaxonomyError(f"{where}: rules: must be a list of at most {MAX_RULES} rules, not {_what(rules)}")
        for rule in rules:
            row = _rule_row(rule, causes, where)
            rows[row["rule_id"]] = row  # an operator's rule replaces the shipped one with its id
    for row in _reason_rows((("reasons.yaml", reason_file), (str(override), extra)), causes):
        rows.pop(row["rule_id"], None)
        rows[row["rule_id"]] = row
    return Taxonomy(pl.DataFrame(list(rows.values()), schema=RULE_SCHEMA), causes, xids,
                    int(windows.get("before_minutes", 10) * 60), int(windows.get("after_minutes", 5) * 60),
                    int(windows.get("xid_twin_minutes", 5) * 60))
