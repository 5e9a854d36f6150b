"""The taxonomy files: complete XID table, deliberate contested codes, operator overrides, counting rules."""
from datetime import datetime, timedelta

import polars as pl
import pytest

from analysis import attribution, warehouse
from analysis.taxonomy import TaxonomyError, load

SIMULATOR_XIDS = {13: ("user", "warning"), 31: ("user", "warning"), 43: ("user", "info"),
                  48: ("gpu_memory", "critical"), 63: ("gpu_memory", "warning"), 64: ("gpu_memory", "critical"),
                  74: ("nvlink", "critical"), 79: ("gpu_unavailable", "critical"), 94: ("gpu_memory", "warning"),
                  95: ("gpu_memory", "critical"), 119: ("gpu_driver_firmware", "critical"),
                  120: ("gpu_driver_firmware", "critical")}
CONTESTED = (4, 8, 13, 30, 31, 38, 63, 75, 76, 77, 92, 94, 95, 109, 119, 122, 123)


def test_xid_table_is_complete_and_deliberate():
    tax = load()
    assert sorted(tax.xids) == list(range(1, 151))
    for code, (cause, severity) in SIMULATOR_XIDS.items():
        assert (tax.xids[code]["cause"], tax.xids[code]["severity"]) == (cause, severity), code
    for code in CONTESTED:
        assert len(tax.xids[code].get("contested") or "") > 40, f"XID {code} needs its decision explained"
    rules = tax.rules.filter(pl.col("rule_id") == "xid-79").row(0, named=True)
    assert rules["priority"] > tax.rules.filter(pl.col("rule_id") == "aer-fatal")["priority"][0]
    assert tax.before_s == 600 and tax.after_s == 300


def test_operator_override_changes_severity_and_adds_rules(tmp_path):
    f = tmp_path / "site.yaml"
    f.write_text("""
xid_overrides:
  63: {severity: critical}
rules:
  - {id: site-bmc-psu, cause: host_memory, severity: warning, priority: 30,
     match: {source: kernel, message: "(?i)psu.*fail"}}
  - {id: edac-ce, cause: host_memory, severity: warning, priority: 6, match: {kind: mem_ecc, code: [CE]}}
windows: {before_minutes: 15}
""")
    tax = load(f)
    by_id = {r["rule_id"]: r for r in tax.rules.iter_rows(named=True)}
    assert by_id["xid-63"]["severity"] == "critical"
    assert by_id["site-bmc-psu"]["m_message"] == "(?i)psu.*fail"
    assert by_id["edac-ce"]["severity"] == "warning"  # replaced the shipped rule with that id
    assert tax.before_s == 900 and load().xids[63]["severity"] == "warning"  # the shipped file is untouched


@pytest.mark.parametrize("text,error", [
    ("rules: [{id: x, cause: nonsense, severity: warning, match: {kind: xid}}]", "unknown cause"),
    ("rules: [{id: x, cause: pcie, severity: fatal, match: {kind: xid}}]", "severity"),
    ("rules: [{id: x, cause: pcie, severity: warning, match: {message: '(?<=a)b'}}]", "look-around"),
    ("rules: [{id: x, cause: pcie, severity: warning, match: {message: '(unclosed'}}]", "bad message pattern"),
    ("rules: [{id: x, cause: pcie, severity: warning, match: {colour: red}}]", "match needs"),
    ("xid_overrides: {999: {severity: info}}", "no such XID"),
    ("xid_overrides: {63: {severity: superbad}}", "bad.yaml .xid_overrides 63"),
    ("rules: [{id: x, cause: pcie, severity: warning, match: {source: kernal}}]", "unknown source"),
    ("windows: {before_minutes: -5}", "windows.before_minutes"),
    ("surprise: 1", "unknown keys"),
])
def test_bad_override_files_are_refused_clearly(tmp_path, text, error):
    f = tmp_path / "bad.yaml"
    f.write_text(text)
    with pytest.raises(TaxonomyError, match=error):
        load(f)


def _events(con, rows):
    frame = pl.DataFrame(rows, schema={"event_time": pl.Datetime("us"), "host": pl.Utf8, "source": pl.Utf8,
                                       "kind": pl.Utf8, "code": pl.Utf8, "severity": pl.Utf8, "message": pl.Utf8,
                                       "device": pl.Utf8, "reporter": pl.Utf8, "file": pl.Utf8, "line_no": pl.Int64},
                         orient="row")
    con.register("ev", frame)
    con.execute("INSERT INTO node_events BY NAME SELECT * FROM ev")
    con.unregister("ev")


def test_xid13_counts_as_hardware_only_when_repeated_on_one_gpu(tmp_path):
    con = warehouse.connect(tmp_path / "w.duckdb")
    t0 = datetime(2024, 3, 1, 10)
    msg = "NVRM: Xid (PCI:{d}): 13, pid=1, name=python, Graphics SM Warp Exception"
    same = [(t0 + timedelta(minutes=i * 3), "gpu0001", "kernel", "xid", "13", None, msg.format(d="0000:18:00"),
             "0000:18:00", "gpu0001", "k.log", i + 1) for i in range(3)]
    spread = [(t0 + timedelta(minutes=i * 3), "gpu0002", "kernel", "xid", "13", None, msg.format(d=d), d, "gpu0002",
               "k.log", 10 + i) for i, d in enumerate(["0000:18:00", "0000:2a:00", "0000:3a:00"])]
    _events(con, same + spread)
    attribution.classify_events(con, load())
    got = con.execute("SELECT host, line_no, rule, cause FROM classified_events ORDER BY host, line_no").fetchall()
    assert [r[2] for r in got if r[0] == "gpu0001"] == ["xid-13", "xid-13", "xid13-repeated-same-gpu"]
    assert {r[3] for r in got if r[0] == "gpu0002"} == {"user"}
    con.close()
