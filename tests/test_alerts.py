"""What SREs watch (analysis/alerts/, docs/alerts.md): the metrics file node_exporter's textfile collector serves,
the Alertmanager payload of the new drain and escalation decisions (posted only when a URL is set), and the Grafana
dashboard over the metrics."""
from __future__ import annotations

import json
import re
import shutil
import socket
import threading
from datetime import datetime, timedelta, timezone
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import duckdb
import jsonschema
import polars as pl
import pytest
from prometheus_client.parser import text_string_to_metric_families

from analysis import alerts, sql, warehouse
from analysis.alerts import alertmanager, metrics
from analysis.commands import data_health
from pipelines.cli import DEMO_SOURCE
from pipelines.runner import run_pipeline

SCHEMAS = Path(alerts.__file__).parent
NO_HEALTH = pl.DataFrame(schema=data_health.COLUMNS)
T0 = datetime(2026, 1, 10, 3, 0, tzinfo=timezone.utc)

# -- promtool check metrics, stood in for -------------------------------------------------------------------
# The rules of promtool's linter (prometheus/client_golang, prometheus/testutil/promlint/validations: help, units,
# counter, histogram/summary reserved names, type in name, reserved chars, camelCase, unit abbreviations).
NON_BASE_UNITS = {"minutes", "hours", "days", "weeks", "kelvins", "fahrenheit", "rankine", "inches", "yards", "miles",
                  "bits", "calories", "pounds", "ounces"}
BASE_UNITS = {"amperes", "bytes", "celsius", "grams", "joules", "kelvin", "meters", "metres", "seconds", "volts"}
UNIT_PREFIXES = ("pico", "nano", "micro", "milli", "centi", "deci", "deca", "hecto", "kilo", "kibi", "mega", "mibi",
                 "giga", "gibi", "tera", "tebi", "peta", "pebi")
UNIT_ABBREVIATIONS = ("s", "ms", "us", "ns", "sec", "b", "kb", "mb", "gb", "tb", "pb", "m", "h", "d")
TYPES_IN_NAME = ("counter", "gauge", "histogram", "summary", "gauge_histogram")
METRIC_NAME = re.compile(r"^[a-zA-Z_:][a-zA-Z0-9_:]*$")
LABEL_NAME = re.compile(r"^[a-zA-Z_][a-zA-Z0-9_]*$")
SAMPLE = re.compile(r"^(?P<name>[a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(?P<labels>.*)\})? (?P<value>\S+)(?P<ts> \S+)?$")


def promtool_problems(text: str) -> list[str]:
    """What `promtool check metrics` would report on ``text``: a parse error (prometheus_client's parser of the
    text format), then its linter's naming rules, plus what node_exporter's textfile collector refuses (client
    timestamps, the same series twice). promtool is not installed here: this stands in for it."""
    problems = []
    try:
        families = list(text_string_to_metric_families(text))
    except ValueError as exc:
        return [f"parse error: {exc}"]
    declared = dict(re.findall(r"^# TYPE (\S+) (\S+)$", text, re.M))
    helped = set(re.findall(r"^# HELP (\S+) ", text, re.M))
    for name, kind in declared.items():
        problems += [f"{name}: {p}" for p in _name_problems(name, kind)]
        if name not in helped:
            problems.append(f"{name}: no help text")
    seen = set()
    for line in text.splitlines():
        if not line or line.startswith("#"):
            continue
        found = SAMPLE.match(line)
        if not found:
            problems.append(f"not a sample line: {line}")
            continue
        if found["ts"]:
            problems.append(f"{found['name']}: a client-side timestamp (the textfile collector refuses it)")
        if found["name"] not in declared:
            problems.append(f"{found['name']}: a sample of no declared family")
        if line.rsplit(" ", 1)[0] in seen:
            problems.append(f"{found['name']}: the same series twice")
        seen.add(line.rsplit(" ", 1)[0])
    for family in families:
        for s in family.samples:
            for label in s.labels:
                if not LABEL_NAME.match(label) or label.startswith("__"):
                    problems.append(f"{s.name}: invalid label name {label}")
                if re.search(r"[a-z][A-Z]", label):
                    problems.append(f"{s.name}: label names should be written in 'snake_case' not 'camelCase'")
                if label in ("le", "quantile"):
                    problems.append(f"{s.name}: label {label} is reserved for histograms and summaries")
    return problems


def _name_problems(name: str, kind: str) -> list[str]:
    out = [] if METRIC_NAME.match(name) else ["invalid metric name"]
    if kind == "counter" and not name.endswith("_total"):
        out.append('counter metrics should have "_total" suffix')
    if kind not in ("counter", "untyped") and name.endswith("_total"):
        out.append('non-counter metrics should not have "_total" suffix')
    if kind != "histogram" and name.endswith("_bucket"):
        out.append('non-histogram metrics should not have "_bucket" suffix')
    if kind not in ("histogram", "summary") and (name.endswith("_count") or name.endswith("_sum")):
        out.append('non-histogram and non-summary metrics should not have "_count" or "_sum" suffix')
    lower = name.lower()
    out += [f"metric name should not include type '{t}'" for t in TYPES_IN_NAME
            if f"_{t}_" in lower or lower.endswith(f"_{t}")]
    if ":" in name:
        out.append("metric names should not contain ':'")
    if re.search(r"[a-z][A-Z]", name):
        out.append("metric names should be written in 'snake_case' not 'camelCase'")
    for token in name.split("_"):
        unit = next((token[len(p):] for p in ("", *UNIT_PREFIXES) if token.startswith(p)
                     and token[len(p):] in NON_BASE_UNITS | BASE_UNITS), None)
        if unit in NON_BASE_UNITS or (unit and unit != token):
            out.append(f"use a base unit instead of {token!r}")
    out += ["metric names should not contain abbreviated units" for a in UNIT_ABBREVIATIONS
            if f"_{a}_" in lower or lower.endswith(f"_{a}")]
    return out


def test_the_promtool_stand_in_finds_what_promtool_finds():
    good = "# HELP goodput_x_seconds A time.\n# TYPE goodput_x_seconds gauge\ngoodput_x_seconds 1\n"
    assert promtool_problems(good) == []
    bad = {
        "# HELP a_events Events.\n# TYPE a_events counter\na_events 1\n": '"_total" suffix',
        "# HELP a_total A.\n# TYPE a_total gauge\na_total 1\n": 'should not have "_total"',
        "# HELP a_gpu_hours A.\n# TYPE a_gpu_hours gauge\na_gpu_hours 1\n": "base unit",
        "# HELP a_milliseconds A.\n# TYPE a_milliseconds gauge\na_milliseconds 1\n": "base unit",
        "# HELP a_lost_s A.\n# TYPE a_lost_s gauge\na_lost_s 1\n": "abbreviated units",
        "# HELP a_nodes_count A.\n# TYPE a_nodes_count gauge\na_nodes_count 1\n": '"_count"',
        "# HELP a_gauge A.\n# TYPE a_gauge gauge\na_gauge 1\n": "include type",
        "# HELP a A.\n# TYPE a gauge\na{nodeName=\"x\"} 1\n": "camelCase",
        "# TYPE a gauge\na 1\n": "no help text",
        "# HELP a A.\n# TYPE a gauge\na 1 1700000000000\n": "timestamp",
        "# HELP a A.\n# TYPE a gauge\na{x=\"1\"} 1\na{x=\"1\"} 2\n": "twice",
        "# HELP a A.\n# TYPE a gauge\na{x=\"unclosed} 1\n": "parse error",
    }
    for text, expected in bad.items():
        assert any(expected in p for p in promtool_problems(text)), (text, promtool_problems(text))


# -- the metrics file of a real run -------------------------------------------------------------------------

@pytest.fixture(scope="module")
def demo_run(demo_warehouse):
    """`goodput run` on the demo sample (conftest.demo_warehouse): its warehouse and --out."""
    return demo_warehouse, demo_warehouse.parent / "out"


def _families(text: str) -> dict:
    return {f.name: f for f in text_string_to_metric_families(text)}


def _value(families: dict, name: str, **labels) -> float:
    family = families[name.removesuffix("_total")]
    (value,) = [s.value for s in family.samples if s.name == name and s.labels == labels]
    return value


def test_goodput_run_writes_a_metrics_file_promtool_accepts(demo_run):
    """The file `goodput run` wrote, checked as `promtool check metrics` would (promtool_problems stands in for
    promtool, which is not installed here), and its numbers against the warehouse."""
    db, out = demo_run
    text = (out / alerts.METRICS_FILE).read_text()
    assert promtool_problems(text) == []
    declared = dict(re.findall(r"^# TYPE (\S+) (\S+)$", text, re.M))
    assert set(declared) == set(metrics.FAMILIES)  # the demo's warehouse has every table: every family has samples
    assert all(name.startswith("goodput_") for name in declared)
    families = _families(text)
    con = duckdb.connect(str(db), read_only=True)
    try:
        actions = dict(con.execute("SELECT action, count(*) FROM node_actions GROUP BY action").fetchall())
        ettr = con.execute("SELECT median(ettr) FROM job_run_ettr").fetchall()[0][0]
        lost, capacity = con.execute(
            "SELECT sum(lost_failure_gpu_hours + lost_preemption_gpu_hours + lost_straggler_gpu_hours), "
            "sum(capacity_gpu_hours) FROM goodput_daily").fetchall()[0]
        lemons = con.execute("SELECT count(*) FILTER (WHERE is_lemon) FROM lemon_scores "
                             "WHERE as_of = (SELECT max(as_of) FROM lemon_scores)").fetchall()[0][0]
        episodes = con.execute("SELECT count(*) FROM straggler_episodes").fetchall()[0][0]
    finally:
        con.close()
    for action in metrics.ACTIONS:
        assert _value(families, "goodput_node_actions", action=action) == actions.get(action, 0)
    assert actions.get("drain_now")  # the sample drains a lemon: not a file of zeros
    assert _value(families, "goodput_ettr_median_ratio") == pytest.approx(ettr) and 0 < ettr <= 1
    assert _value(families, "goodput_lemon_nodes") == lemons
    assert sum(_value(families, "goodput_straggler_episodes_total", origin=o) for o in metrics.ORIGINS) == episodes
    buckets = sum(_value(families, "goodput_lost_gpu_seconds_total", bucket=b) for b in metrics.LOSS_BUCKETS)
    assert buckets == pytest.approx(lost * 3600) and buckets > 0  # GPU-hours in seconds, the buckets disjoint
    assert _value(families, "goodput_capacity_gpu_seconds_total") == pytest.approx(capacity * 3600)
    assert _value(families, "goodput_run_status", status="ok") == 1
    assert _value(families, "goodput_run_status", status="failed") == 0
    assert (_value(families, "goodput_last_success_timestamp_seconds")
            == _value(families, "goodput_last_run_timestamp_seconds"))
    payload = json.loads((out / alerts.ALERTS_FILE).read_text())
    assert _value(families, "goodput_new_node_alerts", kind="drain") == len(payload)


def test_label_values_are_escaped_and_help_is_one_line():
    odd = 'rack "7"\\ctl\nnext'
    samples = [metrics.Sample("goodput_unusable_source_files", 2, {"source": odd}),
               metrics.Sample("goodput_withheld_steps", 1)]
    text = metrics.render(samples, cluster='c"1')
    assert promtool_problems(text) == []
    families = _families(text)
    assert _value(families, "goodput_unusable_source_files", cluster='c"1', source=odd) == 2
    assert "goodput_ettr_median_ratio" not in text  # no sample: no family (no misleading 0)
    with pytest.raises(AssertionError):  # a sample without its family's labels is a bug, not a file
        metrics.render([metrics.Sample("goodput_node_actions", 1)])


def test_the_file_is_replaced_atomically(tmp_path):
    path = tmp_path / "metrics" / "goodput.prom"
    metrics.write_atomic(path, "old\n")
    metrics.write_atomic(path, "new\n")
    assert path.read_text() == "new\n"
    assert [p.name for p in path.parent.iterdir()] == ["goodput.prom"]  # no temporary file left for the collector


def _copy(db: Path, dest: Path) -> Path:
    dest.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(db, dest / "w.duckdb")
    return dest / "w.duckdb"


def test_a_failed_run_keeps_the_last_success_and_says_it_failed(demo_run, tmp_path):
    db = _copy(demo_run[0], tmp_path)
    out = tmp_path / "out"
    health = pl.DataFrame([("slurm/", "degraded", "every line rejected", "jobs")], schema=data_health.COLUMNS,
                          orient="row")
    assert alerts.publish(db, out, "ok", NO_HEALTH, now=T0) == []
    assert alerts.publish(db, out, "failed", health, now=T0 + timedelta(days=1)) == []
    families = _families((out / alerts.METRICS_FILE).read_text())
    assert _value(families, "goodput_last_success_timestamp_seconds") == T0.timestamp()
    assert _value(families, "goodput_last_run_timestamp_seconds") == (T0 + timedelta(days=1)).timestamp()
    assert _value(families, "goodput_run_status", status="failed") == 1
    assert _value(families, "goodput_data_health_problems", severity="degraded") == 1
    # and a first run that failed knows no success: the family is absent, `absent()` in PromQL finds it
    alerts.publish(db, tmp_path / "first", "failed", NO_HEALTH, now=T0)
    assert "goodput_last_success_timestamp_seconds" not in (tmp_path / "first" / alerts.METRICS_FILE).read_text()


def test_a_warehouse_without_models_or_jobs_still_gives_a_valid_file(tmp_path):
    db = tmp_path / "w.duckdb"
    warehouse.connect(db).close()  # the schema of a first open: no job, no model has run
    assert alerts.publish(db, tmp_path / "out", "failed", NO_HEALTH, now=T0) == []
    text = (tmp_path / "out" / alerts.METRICS_FILE).read_text()
    assert promtool_problems(text) == []
    assert "goodput_node_actions" not in text and "goodput_ettr_median_ratio" not in text
    assert json.loads((tmp_path / "out" / alerts.ALERTS_FILE).read_text()) == []


# -- which decisions are new --------------------------------------------------------------------------------

AS_OF, BEFORE, BACKTEST = datetime(2024, 3, 3), datetime(2024, 3, 2), datetime(2024, 2, 1)
RMA = "repeat offender: 4 hardware incidents in 180 days (GPU x4): GPU failed 4 times, RMA it"


def _decisions_warehouse(path: Path, history: bool = True, lifecycle: bool = False) -> duckdb.DuckDBPyConnection:
    """node_actions as of AS_OF and, in node_action_history, the decisions as of BEFORE (and an older backtest)."""
    con = warehouse.connect(path)
    now = [("gpu1", "drain_now", "xid_79", 0.9, "lemon node (xid)"),  # was watched: newly drained
           ("gpu2", "drain_after_job", "ecc", 0.5, "2 confirmed incidents in 14 days"),  # unchanged: not new
           ("gpu3", "drain_after_job", "ecc", 0.5, "2 confirmed incidents in 14 days"),  # no decision before: new
           ("gpu4", "drain_now", "gpu", 1.0, RMA),  # drained before, now escalated to RMA: an escalation only
           ("gpu5", "drain_after_job", "gpu", 0.5, RMA.replace("RMA it", "RMA it; repaired 2024-03-01 since")),
           ("gpu6", "drain_now", "gpu", 1.0, RMA),  # escalated before too: nothing new
           ("gpu7", "watch", "ecc", 0.1, "first incident: ecc")]
    before = [("gpu1", "watch", "xid_79", 0.2, "first incident: xid_79"),
              ("gpu2", "drain_after_job", "ecc", 0.5, "2 confirmed incidents in 14 days"),
              ("gpu4", "drain_now", "gpu", 0.9, "critical gpu on 2024-03-01 00:00"),
              ("gpu5", "drain_after_job", "gpu", 0.5, "2 confirmed incidents in 14 days"),
              ("gpu6", "drain_now", "gpu", 1.0, RMA)]
    backtest = [("gpu2", "watch", "ecc", 0.1, "first incident: ecc")]  # older: never "the previous decisions"
    con.execute("CREATE TABLE node_actions (host VARCHAR, as_of TIMESTAMP, action VARCHAR, reason VARCHAR, "
                "cause VARCHAR, score DOUBLE)")
    con.executemany("INSERT INTO node_actions VALUES (?, ?, ?, ?, ?, ?)",
                    [(h, AS_OF, a, r, c, s) for h, a, c, s, r in now])
    if history:
        sql.run(con, "schema/node_action_history")
        con.executemany("INSERT INTO node_action_history VALUES (?, ?, ?, ?, ?, ?, now())",
                        [(t, h, a, s, c, r) for t, rows in ((AS_OF, now), (BEFORE, before), (BACKTEST, backtest))
                         for h, a, c, s, r in rows])
    if lifecycle:
        con.execute("CREATE TABLE node_lifecycle (host VARCHAR, state VARCHAR, since TIMESTAMP)")
        con.execute("CREATE VIEW node_lifecycle_now AS SELECT * FROM node_lifecycle")
        con.executemany("INSERT INTO node_lifecycle VALUES (?, ?, ?)",
                        [("gpu7", "escalated", AS_OF - timedelta(hours=6)),  # since the previous decisions: new
                         ("gpu6", "escalated", BEFORE - timedelta(days=3)),  # escalated before them: not new
                         ("gpu2", "drained", AS_OF)])
    return con


def _new(con) -> dict[str, set[str]]:
    new = alertmanager.new_decisions(con)
    return {k: set(new.filter(pl.col("kind") == k)["host"]) for k in ("drain", "escalation")}


def test_new_is_against_the_previous_decisions(tmp_path):
    con = _decisions_warehouse(tmp_path / "w.duckdb")
    try:
        assert _new(con) == {"drain": {"gpu1", "gpu3"}, "escalation": {"gpu4"}}
        new = alertmanager.new_decisions(con)
        assert dict(zip(new["host"], new["previous_action"])) == {"gpu1": "watch", "gpu3": None, "gpu4": "drain_now"}
    finally:
        con.close()


def test_without_history_every_current_drain_and_escalation_is_new(tmp_path):
    con = _decisions_warehouse(tmp_path / "w.duckdb", history=False)
    try:
        assert _new(con) == {"drain": {"gpu1", "gpu2", "gpu3", "gpu4", "gpu5", "gpu6"}, "escalation": {"gpu4", "gpu6"}}
    finally:
        con.close()


def test_the_node_lifecycle_escalations_since_the_previous_decisions_are_new(tmp_path, monkeypatch):
    # the node lifecycle's tables, as sql/models declares them (stood in for where that is not there yet)
    declared = sql.tables()
    monkeypatch.setattr(sql, "tables", lambda: declared | {"node_lifecycle", "node_lifecycle_now"})
    con = _decisions_warehouse(tmp_path / "w.duckdb", lifecycle=True)
    try:
        new = alertmanager.new_decisions(con)
        escalations = new.filter(pl.col("kind") == "escalation")
        assert set(escalations["host"]) == {"gpu4", "gpu7"}
        gpu7 = escalations.filter(pl.col("host") == "gpu7").row(0, named=True)
        assert gpu7["escalated_since"] == AS_OF - timedelta(hours=6) and gpu7["action"] == "watch"
    finally:
        con.close()


# -- the Alertmanager payload ---------------------------------------------------------------------------------

RFC3339 = re.compile(r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})$")


def _validate_payload(payload) -> None:
    """Against the JSON Schema written from Alertmanager's v2 OpenAPI spec (postableAlerts), its formats checked:
    jsonschema checks date-time and uri only with optional packages, so they are given here."""
    schema = json.loads((SCHEMAS / "alertmanager-alerts.schema.json").read_text())
    formats = jsonschema.FormatChecker()
    formats.checks("date-time")(lambda v: not isinstance(v, str) or bool(RFC3339.match(v)))
    formats.checks("uri")(lambda v: not isinstance(v, str) or bool(re.match(r"^[a-z][a-z0-9+.-]*:\S+$", v)))
    jsonschema.Draft202012Validator(schema, format_checker=formats).validate(payload)
    for alert in payload:
        assert alert["startsAt"] < alert["endsAt"]  # Alertmanager refuses an alert that ends before it starts


def test_the_payload_is_what_alertmanager_v2_takes(tmp_path):
    con = _decisions_warehouse(tmp_path / "w.duckdb")
    try:
        payload = alertmanager.alerts(alertmanager.new_decisions(con), T0, "rsc1", (tmp_path / "r.html").as_uri())
    finally:
        con.close()
    _validate_payload(payload)
    by = {(a["labels"]["alertname"], a["labels"]["node"]): a for a in payload}
    assert set(by) == {("GoodputNodeDrain", "gpu1"), ("GoodputNodeDrain", "gpu3"), ("GoodputNodeEscalated", "gpu4")}
    gpu1 = by["GoodputNodeDrain", "gpu1"]
    assert gpu1["labels"] == {"alertname": "GoodputNodeDrain", "node": "gpu1", "source": "goodput",
                              "severity": "critical", "action": "drain_now", "cause": "xid_79", "cluster": "rsc1"}
    assert gpu1["annotations"]["description"] == "lemon node (xid)" and gpu1["annotations"]["score"] == "0.90"
    assert gpu1["annotations"]["previous_action"] == "watch"
    assert gpu1["startsAt"] == "2024-03-03T00:00:00Z" and gpu1["endsAt"] == "2026-01-11T15:00:00Z"
    assert by["GoodputNodeEscalated", "gpu4"]["annotations"]["description"] == RMA
    with pytest.raises(jsonschema.ValidationError):  # the schema is not vacuous
        _validate_payload([{**gpu1, "startsAt": "2024-03-03 00:00"}])
    with pytest.raises(jsonschema.ValidationError):
        _validate_payload([{**gpu1, "labels": {"bad-name": "x", "alertname": "a", "node": "n"}}])


def test_goodput_run_writes_the_payload(demo_run):
    payload = json.loads((demo_run[1] / alerts.ALERTS_FILE).read_text())
    _validate_payload(payload)
    assert [a["labels"]["node"] for a in payload] == ["gpu005"]  # the sample's lemon, and no earlier decisions
    assert payload[0]["generatorURL"].startswith("file://") and payload[0]["generatorURL"].endswith(".html")


class _Alertmanager:
    """A local stand-in for Alertmanager's API: records each POST, answers ``status``."""

    def __init__(self, status: int = 200):
        received = self.received = []

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):
                body = self.rfile.read(int(self.headers["Content-Length"]))
                received.append((self.path, self.headers["Content-Type"], json.loads(body)))
                self.send_response(status)
                self.end_headers()
                self.wfile.write(b"" if status == 200 else b"bad alerts")

            def log_message(self, *args):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self):
        self.server.shutdown()
        self.server.server_close()


def test_alerts_are_posted_only_to_a_configured_alertmanager(demo_run, tmp_path):
    db = _copy(demo_run[0], tmp_path)
    server = _Alertmanager()
    try:
        assert alerts.publish(db, tmp_path / "quiet", "ok", NO_HEALTH, now=T0) == []
        assert server.received == []  # no URL: nothing leaves the machine
        assert alerts.publish(db, tmp_path / "out", "ok", NO_HEALTH, url=server.url + "/", now=T0) == []
    finally:
        server.close()
    ((path, content_type, body),) = server.received
    assert (path, content_type) == ("/api/v2/alerts", "application/json")
    assert body == json.loads((tmp_path / "out" / alerts.ALERTS_FILE).read_text()) and body


def test_a_failed_post_is_reported_not_raised(demo_run, tmp_path):
    db = _copy(demo_run[0], tmp_path)
    refusing = _Alertmanager(status=400)
    try:
        (problem,) = alerts.publish(db, tmp_path / "a", "ok", NO_HEALTH, url=refusing.url, now=T0)
    finally:
        refusing.close()
    assert "HTTP 400 bad alerts" in problem
    with socket.socket() as closed:
        closed.bind(("127.0.0.1", 0))
        port = closed.getsockname()[1]
    (problem,) = alerts.publish(db, tmp_path / "b", "ok", NO_HEALTH, url=f"http://127.0.0.1:{port}", now=T0)
    assert "could not post 1 alert(s)" in problem
    with socket.socket() as silent:  # accepts the connection, never answers: the short timeout ends the wait
        silent.bind(("127.0.0.1", 0))
        silent.listen()
        url = f"http://127.0.0.1:{silent.getsockname()[1]}"
        (problem,) = alerts.publish(db, tmp_path / "c", "ok", NO_HEALTH, url=url, timeout_s=0.3, now=T0)
    assert "could not post" in problem and "timed out" in problem
    (problem,) = alerts.publish(db, tmp_path / "d", "ok", NO_HEALTH, url="file:///etc/passwd", now=T0)
    assert "must be http(s)" in problem
    for out in "abcd":  # the files are written whatever became of the post
        assert json.loads((tmp_path / out / alerts.ALERTS_FILE).read_text())


def test_goodput_run_posts_to_the_url_it_is_given_and_reports_a_refusal(demo_run, tmp_path, monkeypatch):
    """The wiring: $GOODPUT_ALERTMANAGER_URL reaches the run, whose output says the Alertmanager refused."""
    db = _copy(demo_run[0], tmp_path)
    server = _Alertmanager(status=500)
    monkeypatch.setenv(alertmanager.URL_ENV, server.url)
    try:
        result = run_pipeline(DEMO_SOURCE, db, tmp_path / "out")
    finally:
        server.close()
    assert len(server.received) == 1 and server.received[0][2][0]["labels"]["node"] == "gpu005"
    assert "WARNING: the Alertmanager at " in result.report() and "HTTP 500" in result.report()
    assert result.status == data_health.OK  # the post is no part of the run's own outputs


# -- the Grafana dashboard ---------------------------------------------------------------------------------

def _exprs(dashboard: dict) -> list[str]:
    queries = [v.get("definition") or v.get("query") for v in dashboard["templating"]["list"] if v["type"] == "query"]
    return [t["expr"] for p in dashboard["panels"] for t in p["targets"]] + queries


def test_the_dashboard_is_a_grafana_dashboard_over_exactly_the_metrics(demo_run):
    dashboard = json.loads(alerts.DASHBOARD.read_text())
    schema = json.loads((SCHEMAS / "grafana-dashboard.schema.json").read_text())
    jsonschema.Draft202012Validator(schema).validate(dashboard)
    panels = dashboard["panels"]
    assert len({p["id"] for p in panels}) == len(panels)
    cells = [(p["gridPos"]["x"] + dx, p["gridPos"]["y"] + dy) for p in panels
             for dx in range(p["gridPos"]["w"]) for dy in range(p["gridPos"]["h"])]
    assert all(x < 24 for x, _ in cells) and len(cells) == len(set(cells))  # on the 24-column grid, no overlap
    assert any(v["type"] == "datasource" and v["name"] == "datasource" for v in dashboard["templating"]["list"])
    names = {n for e in _exprs(dashboard) for n in re.findall(r"\bgoodput_[a-z0-9_]+", e)}
    exported = set(re.findall(r"^# TYPE (\S+) ", (demo_run[1] / alerts.METRICS_FILE).read_text(), re.M))
    assert names <= exported, names - exported  # every query names a family the run's file has
    assert names == set(metrics.FAMILIES)  # and every family is on the dashboard


def test_the_dashboard_ships_with_the_package():
    from importlib.resources import files

    assert files("analysis.alerts").joinpath("grafana-dashboard.json").is_file()
    assert alerts.DASHBOARD == Path(str(files("analysis.alerts").joinpath("grafana-dashboard.json")))
