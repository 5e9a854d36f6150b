"""The taxonomy files: complete XID table, deliberate contested codes, operator overrides, counting rules."""
import tracemalloc
from datetime import datetime, timedelta
from pathlib import Path

import polars as pl
import pytest

from analysis import warehouse
from analysis.derive import attribution
from analysis.derive.taxonomy import TaxonomyError, load
from analysis.ingest.contract import IngestOptions
from analysis.ingest.engine import ingest_directory
from analysis.ingest.parsers import joblogs, kernel
from assets.pure_builds import build_all
from tests.conftest import parse_file

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
    ("rules: [{id: x, cause: pcie, severity: warning, match: {colour: red}}]", "match: unknown keys"),
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


WRONG_TYPES = [  # (file text, the key the one-line error must name)
    ("rules: {id: x}", "rules: must be a list"),
    ("rules: [just-a-string]", "a rule: must be a mapping"),
    ("rules: [{id: [1], cause: pcie, severity: warning, match: {kind: xid}}]", "id must be a string"),
    ("rules: [{id: x, cause: pcie, severity: warning, match: {message: 42}}]", "rule x: match.message"),
    ("rules: [{id: x, cause: pcie, severity: warning, match: {kind: [[xid]]}}]", "rule x: match.kind"),
    ("rules: [{id: x, cause: pcie, severity: warning, match: {kind: []}}]", "rule x: match.kind: is an empty list"),
    ("rules: [{id: x, cause: pcie, severity: warning, match: xid}]", "rule x: match: must be a mapping"),
    ("rules: [{id: x, cause: pcie, severity: warning, priority: high, match: {kind: xid}}]", "rule x: priority"),
    ("rules: [{id: x, cause: pcie, severity: warning, priority: 1e400, match: {kind: xid}}]", "rule x: priority"),
    ("rules: [{id: x, cause: pcie, severity: warning, transient: 'no', match: {kind: xid}}]", "rule x: transient"),
    ("rules: [{id: x, cause: pcie, severity: [warning], match: {kind: xid}}]", "rule x: severity"),
    ("rules: [{id: x, cause: pcie, severity: warning, colour: red, match: {kind: xid}}]", "unknown keys ['colour']"),
    ("rules: [{id: x, cause: pcie, severity: warning, match: {kind: xid}, count: 3}]", "rule x: count: must be"),
    ("rules: [{id: x, cause: pcie, severity: warning, match: {kind: xid}, count: {window_minutes: 5}}]",
     "rule x: count needs n"),
    ("rules: [{id: x, cause: pcie, severity: warning, match: {kind: xid}, count: {n: 3, window_minutes: -10}}]",
     "rule x: count.window_minutes"),
    ("rules: [{id: x, cause: pcie, severity: warning, match: {kind: xid}, count: {n: 3, window_minutes: .nan}}]",
     "rule x: count.window_minutes"),
    ("rules: [{id: x, cause: pcie, severity: warning, match: {kind: xid}, count: {n: 1}}]", "rule x: count.n"),
    ("rules: [{id: x, cause: pcie, severity: warning, match: {kind: xid}, count: {n: 3, per: rack}}]",
     "rule x: count.per"),
    ("windows: [10]", "windows: must be a mapping"),
    ("windows: {before_minutes: ten}", "windows.before_minutes"),
    ("windows: {after_minutes: -1}", "windows.after_minutes"),
    ("windows: {during_minutes: 3}", "windows: unknown keys"),
    ("xid_overrides: [63]", "xid_overrides: must be a mapping"),
    ("xid_overrides: {63: critical}", "xid_overrides 63: must be a mapping"),
    ("xid_overrides: {63: {priority: [1]}}", "rule xid-63: priority"),
    ("xid_overrides: {abc: {priority: 1}}", "xid_overrides abc: no such XID"),
    ("causes: [cosmic_rays]", "causes: must be a mapping"),
    ("causes: {cosmic: {domain: space}}", "causes.cosmic.domain"),
    ("causes: {cosmic: hardware}", "causes.cosmic: must be a mapping"),
    ("- rules\n- windows", "must be a mapping"),
    ("rules: [{id: x", "not valid YAML: line 2"),
    ("a: 1\n---\nb: 2", "not valid YAML"),
    ("when: !!python/object/apply:os.system ['true']", "not valid YAML"),
]


@pytest.mark.parametrize("text,key", WRONG_TYPES)
def test_wrong_types_in_a_rules_file_give_one_line_naming_file_and_key(tmp_path, text, key):
    f = tmp_path / "bad.yaml"
    f.write_text(text)
    with pytest.raises(TaxonomyError) as caught:  # a TypeError or AttributeError here was a traceback for the user
        load(f)
    message = str(caught.value)
    assert "\n" not in message and message.startswith(str(f)), message
    assert key in message, message


def test_not_utf8_and_missing_files_are_refused_clearly(tmp_path):
    f = tmp_path / "latin1.yaml"
    f.write_bytes(b"rules: [{id: caf\xe9}]")
    with pytest.raises(TaxonomyError, match="not UTF-8"):
        load(f)
    with pytest.raises(TaxonomyError, match="cannot read .*missing.yaml"):
        load(tmp_path / "missing.yaml")


def _laughs(levels: int, where: str) -> str:
    """The "billion laughs" file: each level refers to the previous one nine times."""
    lines = ['l0: &l0 "lol"']
    lines += [f"l{i}: &l{i} [{', '.join([f'*l{i - 1}'] * 9)}]" for i in range(1, levels + 1)]
    return "\n".join(lines).replace("l0: ", f"{where}\n  l0: ", 1).replace("\nl", "\n  l")


def test_yaml_alias_bomb_is_refused_before_it_expands(tmp_path):
    # 9**6 strings: small enough that the old loader (which printed the value in its error) survived it
    small = tmp_path / "small.yaml"
    small.write_text(_laughs(6, "windows:").replace("  l6:", "  before_minutes:"))
    with pytest.raises(TaxonomyError, match=r"small.yaml: line \d+: YAML aliases"):
        load(small)
    bomb = tmp_path / "bomb.yaml"  # 9**9 strings: gigabytes once expanded
    bomb.write_text(_laughs(9, "windows:").replace("  l9:", "  before_minutes:"))
    tracemalloc.start()
    try:
        with pytest.raises(TaxonomyError, match="YAML aliases"):
            load(bomb)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 20_000_000


def test_huge_and_deeply_nested_rules_files_are_refused(tmp_path):
    big = tmp_path / "big.yaml"
    big.write_text("rules: []\n" + "# padding\n" * 200_000)
    with pytest.raises(TaxonomyError, match="larger than"):
        load(big)
    deep = tmp_path / "deep.yaml"
    deep.write_text("rules: " + "[" * 50_000 + "]" * 50_000)
    # libyaml's own depth limit (1000) may trip first when it reads ahead; either way one line naming the file.
    with pytest.raises(TaxonomyError, match=r"deep.yaml: .*(nested more than|nesting depth)"):
        load(deep)
    shallow_but_too_deep = tmp_path / "deep2.yaml"
    shallow_but_too_deep.write_text("rules: " + "[" * 40 + "]" * 40)
    with pytest.raises(TaxonomyError, match="deep2.yaml: line 1: nested more than 32"):
        load(shallow_but_too_deep)


RESETS = Path(__file__).parent / "fixtures" / "connection_reset"


def test_connection_reset_fires_on_job_logs_and_collectives_not_on_system_noise(tmp_path):
    """sshd, xinetd and BG/L's ciod print "Connection reset by peer" for any client that goes away
    (real lines: fixtures/connection_reset/SOURCES.md): no NCCL timeout. The same words from NCCL,
    Gloo or c10d, or in a job's own output (source app), still are."""
    con = warehouse.connect(tmp_path / "w.duckdb")
    noise = []
    for name, options in (("linux-xinetd.log", IngestOptions(syslog_year=2005)), ("bgl-ciod.log", None),
                          ("sshd.log", IngestOptions(syslog_year=2024))):
        result, counts = parse_file(kernel.parse, RESETS / name, "kernel", options)
        events = result.tables["node_events"]
        assert counts.rejects == 0 and events.height == counts.lines and events["message"].str.contains(
            "Connection reset by peer").all(), name
        noise.append(events.with_columns(file=pl.lit(name)))
    con.register("noise", pl.concat(noise, how="diagonal_relaxed"))
    con.execute("INSERT INTO node_events BY NAME SELECT * FROM noise")
    t0 = datetime(2024, 3, 1, 10)
    nccl = (RESETS / "nccl-pytorch.log").read_text().splitlines()
    resets = {i + 1 for i, text in enumerate(nccl) if "reset by peer" in text}
    own = len(nccl) + 1  # the ConnectionResetError's line
    # the collective libraries' lines wherever they land (a service's stdout in syslog), and in a job's output:
    # the lines the job-log parser keeps, plus Python's own ConnectionResetError with no library named
    (tmp_path / "slurm-4242.out").write_text("\n".join(nccl) + "\n")  # a job log names its job
    job = parse_file(joblogs.parse, tmp_path / "slurm-4242.out", "joblogs", host_hint=None)[0].tables["job_log_lines"]
    assert resets <= set(job["line_no"])  # every reset line is kept (test_collective_resets_... reads the rest)
    _events(con, [(t0, "gpu0001", "kernel", "other", None, None, text, None, "gpu0001", "syslog", i + 1)
                  for i, text in enumerate(nccl)]
            + [(t0, "gpu0002", "app", kind, code, None, text, None, None, "slurm-4242.out", no)
               for no, kind, code, text in job.select("line_no", "kind", "code", "message").iter_rows()]
            + [(t0, "gpu0002", "app", "exception", "ConnectionResetError", None,
                "ConnectionResetError: [Errno 104] Connection reset by peer", None, None, "slurm-4242.out", own)])
    attribution.classify_events(con, load())
    got = {(f, n): (rule, cause) for f, n, rule, cause in
           con.execute("SELECT file, line_no, rule, cause FROM classified_events").fetchall()}
    con.close()
    assert not [k for k in got if k[0] in ("linux-xinetd.log", "bgl-ciod.log", "sshd.log")]  # no rule fires on the noise
    assert {got[("syslog", n)] for n in resets} == {("connection-reset-nccl", "nccl_timeout")}
    assert {got[("slurm-4242.out", n)][1] for n in resets | {own}} == {"nccl_timeout"}
    assert got[("slurm-4242.out", own)][0] == "connection-reset"


# c10d's connect warning (torch/csrc/distributed/c10d/socket.cpp: "... (errno: %d - %s)."), as vllm-project/vllm#3771
# quotes it with errno 110, here with ECONNRESET
C10D_CONNECT = ("[W socket.cpp:663] [c10d] The client socket has failed to connect to [gpu002]:29500 "
                "(errno: 104 - Connection reset by peer).")


def test_collective_resets_in_a_job_log_classify_end_to_end(tmp_path):
    """Ingest -> job_log_events -> classification: the NCCL, c10d and TCPStore lines of a failed job's output
    (fixtures/connection_reset/nccl-pytorch.log: NCCL WARN lines behind NCCL's own stamp, a container's or a
    launcher's prefix, PyTorch's echo of NCCL's last error) become NCCL-timeout symptoms; NCCL INFO lines stay
    out; sshd's and xinetd's resets on the job's node, in the same minutes, explain nothing."""
    src = tmp_path / "src"
    for d in ("slurm", "joblogs", "kernel"):
        (src / d).mkdir(parents=True)
    (src / "slurm" / "sacct.txt").write_text(
        "JobID|JobIDRaw|JobName|User|Partition|State|ExitCode|Submit|Start|End|NNodes|AllocTRES|NodeList\n"
        "4243|4243|train|ana|gpu|FAILED|1:0|2024-03-01T00:59:00|2024-03-01T01:00:00|2024-03-01T02:12:00|1|"
        "gres/gpu=8,node=1|gpu001\n")
    log = (RESETS / "nccl-pytorch.log").read_text().splitlines() + [C10D_CONNECT]
    (src / "joblogs" / "slurm-4243.out").write_text("\n".join(log) + "\n")
    for name in ("sshd.log", "linux-xinetd.log"):  # sshd's on gpu001 at 02:10, within the job's window
        (src / "kernel" / name).write_bytes((RESETS / name).read_bytes())
    con = warehouse.connect(tmp_path / "w.duckdb")
    assert {o.status for o in ingest_directory(con, src, IngestOptions(syslog_year=2024)).outcomes} == {"ok"}
    build_all(con, load())
    kept = dict(con.execute("SELECT line_no, kind FROM job_log_lines").fetchall())
    events = {n: (host, kind) for n, host, kind in con.execute(
        "SELECT line_no, host, kind FROM node_events WHERE source = 'app' AND job_id = '4243'").fetchall()}
    got = {(f.rsplit("/", 1)[-1], n): (rule, cause, severity) for f, n, rule, cause, severity in con.execute(
        "SELECT file, line_no, rule, cause, severity FROM classified_events").fetchall()}
    noise = con.execute("SELECT count(*) FROM node_events WHERE source <> 'app' AND message LIKE '%reset by peer%'"
                        ).fetchall()[0][0]
    con.close()
    info = {i + 1 for i, text in enumerate(log) if " NCCL INFO " in text}
    resets = {i + 1 for i, text in enumerate(log) if "reset by peer" in text}
    assert len(info) == 3 and not info & set(kept)  # NCCL INFO chatter stays out, "Last error:" too
    assert set(kept) == set(range(1, len(log) + 1)) - info - {log.index("Last error:") + 1}
    assert {kept[n] for n in resets} == {"connection_reset", "exception"}  # the Gloo RuntimeError stays one
    assert {kept[n] for n in (5, 9, 11)} == {"nccl_warn"}  # after NCCL's own stamp and a [155] label too
    assert events.keys() == kept.keys() and {h for h, _ in events.values()} == {"gpu001"}  # job_log_events
    job = {n: v for (f, n), v in got.items() if f == "slurm-4243.out"}
    assert {job[n] for n in resets} == {("connection-reset", "nccl_timeout", "warning")}
    assert {job[n] for n in (14, 15)} == {("app-nccl-error", "nccl_timeout", "warning")}  # ncclRemoteError
    assert {job[n] for n in (5, 9, 11)} == {("app-nccl-warn", "nccl_timeout", "info")}
    assert noise == 4 and not [k for k in got if k[0] in ("sshd.log", "linux-xinetd.log")]
