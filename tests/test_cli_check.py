"""`goodput check` verdicts per folder, and the JSON outputs of `why` and `ettr` against their text."""
import json
import re
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from analysis import warehouse
from analysis.derive.taxonomy import load
from analysis.ingest.engine import ingest_directory
from analysis.package_files import demo_source
from assets.pure_builds import build_all
from pipelines.cli import main

DEMO = demo_source()
# one broken file per source, each broken the way such files break
BROKEN = {
    "topology": ("cabling-old.csv", "switch,port,host\nleaf01,swp1,\n,swp2,gpu002\n"),
    "slurm": ("sacct-2024-03-02.txt", "JobID|JobIDRaw|State|Start|End|NodeList\n77|77|FAILED|yesterday|2024-03-02T01:00:00|gpu001\n"),
    "slurm_events": ("events-2024-03-02.txt", "NodeName|TimeStart|TimeEnd|State|Reason|User\ngpu001|not a time|Unknown|DRAIN|x|root(0)\n"),
    "kernel": ("gpu002.log", "\x00\x01binary junk after a crash\n"),
    "switch": ("leaf02.log", "<<< log relay restarted >>>\n"),
    "health": ("health-2024-03-02.jsonl", '{"time": "2024-03-0\n'),
    "benchmarks": ("results-broken.jsonl", "{not json\n"),
    "telemetry": ("dcgm-broken.csv", "when,what\n1,2\n"),
    "tickets": ("tickets-old.csv", "host,opened\ngpu001,never\n"),
}


def test_a_folder_of_headers_only_is_a_warning_not_a_failure(tmp_path):
    """A tickets export on a day without tickets is a header and nothing else: nothing is wrong with it."""
    src = tmp_path / "src"
    shutil.copytree(DEMO, src)
    shutil.rmtree(src / "tickets", ignore_errors=True)
    (src / "tickets").mkdir()
    (src / "tickets" / "tickets-2024-03-02.csv").write_text("ticket_id,host,opened,closed,component,resolution\n")
    out = CliRunner().invoke(main, ["check", "--source", str(src), "--json"])
    assert out.exit_code == 0, out.output
    tickets = next(c for c in json.loads(out.output)["folders"] if c["folder"] == "tickets")
    assert (tickets["verdict"], tickets["rows"], tickets["rejects"]) == ("warning", 0, 0)
    assert "no records" in tickets["warnings"][0]


@pytest.fixture(scope="module")
def half_broken(tmp_path_factory):
    src = tmp_path_factory.mktemp("check") / "src"
    shutil.copytree(DEMO, src)
    for folder, (name, text) in BROKEN.items():
        (src / folder / name).write_text(text)
    return src


def test_check_gives_a_verdict_per_folder_and_writes_nothing(half_broken, tmp_path, monkeypatch):
    monkeypatch.setenv("GOODPUT_DB", str(tmp_path / "never.duckdb"))
    clean = CliRunner().invoke(main, ["check", "--source", str(DEMO), "--json"])
    assert clean.exit_code == 0, clean.output
    assert {c["folder"]: c["verdict"] for c in json.loads(clean.output)["folders"]} == {f: "ok" for f in [*BROKEN, "benchmarks"]}
    out = CliRunner().invoke(main, ["check", "--source", str(half_broken), "--json"])
    assert out.exit_code == 1  # a folder failed
    verdicts = {c["folder"]: c for c in json.loads(out.output)["folders"]}
    assert set(verdicts) == set(BROKEN)
    for folder, (name, _) in BROKEN.items():
        c = verdicts[folder]
        assert c["verdict"] in ("warning", "failed"), (folder, c)
        said = " ".join(c["problems"]) + " ".join(r["example"] for r in c["reject_reasons"])
        assert name in said, (folder, c)  # the broken file is named, with its line or the reason it was refused
        assert c["rows"] > 0 and c["sample"]  # the good file still parsed, and rows are shown
    assert verdicts["kernel"]["verdict"] == "failed"  # no parser reads it
    assert any("TimeStart" in r["reason"] for r in verdicts["slurm_events"]["reject_reasons"])
    assert not (tmp_path / "never.duckdb").exists()
    text = CliRunner().invoke(main, ["check", "--source", str(half_broken)]).output
    assert re.search(r"^kernel/\s+FAILED", text, re.M) and re.search(r"^topology/\s+(WARNING|FAILED)", text, re.M)


def test_check_names_hosts_slurm_does_not_know(tmp_path):
    src = tmp_path / "src"
    shutil.copytree(DEMO, src)
    (src / "kernel" / "gpu001.dmesg").unlink()
    (src / "kernel" / "node-9.example.org.log").write_text(
        "2024-03-01T02:10:44+0000 node-9.example.org kernel: NVRM: Xid (PCI:0000:29:00): 79, pid=1, name=python, "
        "GPU has fallen off the bus.\n")
    out = json.loads(CliRunner().invoke(main, ["check", "--source", str(src), "--json"]).output)["folders"]
    kernel = next(c for c in out if c["folder"] == "kernel")
    assert kernel["verdict"] == "warning" and kernel["unmatched_hosts"] == ["node-9"]  # the domain is dropped


@pytest.fixture(scope="module")
def demo_db(tmp_path_factory):
    db = tmp_path_factory.mktemp("why") / "w.duckdb"
    con = warehouse.connect(db)
    ingest_directory(con, DEMO)
    build_all(con, load())
    con.close()
    return db


def test_why_json_carries_what_the_text_says(demo_db):
    text = CliRunner().invoke(main, ["why", "1002", "--db", str(demo_db)]).output
    data = json.loads(CliRunner().invoke(main, ["why", "1002", "--db", str(demo_db), "--json"]).output)
    assert data["times"] == "UTC" and "times in UTC" in text
    inst = data["instances"][0]
    p = inst["primary"]
    assert f"primary cause: {p['cause']} ({p['domain']}) on {p['host']}, rule {p['rule']}" in text
    assert p["event_time"].replace("T", " ")[:19] in text
    assert f"events on its nodes in [{inst['window'][0].replace('T', ' ')}" in text
    assert f": {len(inst['events'])}" in text and all(e["host"] in text for e in inst["events"])


@pytest.mark.parametrize("args", [["--gpus", "4096"], ["--gpus", "131072", "--failure-rate", "2.34", "--checkpoint-min", "30"],
                                  ["--gpus", "131072", "--failure-rate", "50", "--checkpoint-min", "60"]])
def test_ettr_json_carries_what_the_text_says(args):
    text = CliRunner().invoke(main, ["ettr", *args]).output
    data = json.loads(CliRunner().invoke(main, ["ettr", *args, "--json"]).output)
    assert f"job MTTF:       {data['job_mttf_hours']:.3f} h" in text
    assert f"expected ETTR:  {data['expected_ettr']:.4f}" in text
    assert ("outside the closed form's range" in text) == (not data["closed_form_valid"])
    # beyond the closed form, the simulation is run unasked and is the estimate
    assert ("monte_carlo" in data) == (not data["closed_form_valid"] and data["reaches_checkpoints"])
    if "monte_carlo" in data:
        assert f"Monte Carlo:    {data['monte_carlo']['mean']:.4f}" in text and "the Monte Carlo below" in text
    sweep = json.loads(CliRunner().invoke(main, ["ettr", "--sweep", "--json"]).output)
    assert sweep["target_ettr"] == 0.9 and len(sweep["sweep"]) == 25


def test_version():
    out = CliRunner().invoke(main, ["--version"]).output
    assert re.match(r"goodput \d+\.\d+\.\d+", out)


def test_sql_json_and_vertical(demo_db):
    q = "SELECT job_id, instance, cause, host FROM failure_attribution WHERE is_primary ORDER BY job_id"
    records = json.loads(CliRunner().invoke(main, ["sql", "--db", str(demo_db), "--json", q]).output)
    assert records[0] == {"job_id": "1001", "instance": 0, "cause": "gpu_unavailable", "host": "gpu003"}
    vertical = CliRunner().invoke(main, ["sql", "--db", str(demo_db), "-x", q]).output
    assert "-[ row 1 ]" in vertical and re.search(r"^cause\s+\| gpu_unavailable$", vertical, re.M)
    assert f"({len(records)} rows)" in vertical


def test_sql_json_times_are_iso_8601(demo_db):
    q = ("SELECT job_id, start_time, start_time::DATE AS day, end_time - start_time AS took, "
         "[start_time] AS starts, {'at': end_time} AS s FROM jobs WHERE job_id = '1002'")
    (record,) = json.loads(CliRunner().invoke(main, ["sql", "--db", str(demo_db), "--json", q]).output)
    text = CliRunner().invoke(main, ["sql", "--db", str(demo_db), "--csv", q.replace("[start_time] AS starts, ", "")
                                     .replace(", {'at': end_time} AS s", "")]).output.splitlines()[1].split(",")
    assert record["start_time"] == text[1].replace(" ", "T") and re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d",
                                                                            record["start_time"])
    assert record["day"] == text[2] and record["took"] == "PT1H29M12S"  # 1:29:12 as an ISO 8601 duration
    assert record["starts"] == [record["start_time"]] and re.fullmatch(r"\d{4}-.*T.*", record["s"]["at"])


def test_ettr_sweep_takes_the_given_size_and_the_measured_rate(tmp_path):
    from analysis.derive import metrics
    db = tmp_path / "w.duckdb"
    con = warehouse.connect(db)
    ingest_directory(con, DEMO)
    build_all(con, load(), metrics.MetricsConfig())
    measured = con.execute("SELECT r_per_1000_node_days FROM cluster_failure_rate").fetchall()[0][0]
    con.close()
    rows = json.loads(CliRunner().invoke(main, ["ettr", "--sweep", "--json", "--gpus", "2048", "--failure-rate", "3"]).output)["sweep"]
    assert {r["gpus"] for r in rows} >= {2048, 1024} and 3.0 in {r["failures_per_1000_node_days"] for r in rows}
    one = json.loads(CliRunner().invoke(main, ["ettr", "--json", "--from-db", "--db", str(db)]).output)
    assert one["failures_per_1000_node_days"] == pytest.approx(measured)
    assert one["gpus_per_node"] == 8 and one["nodes"] == one["gpus"] / 8  # the sample's nodes have 8 GPUs
    four = json.loads(CliRunner().invoke(main, ["ettr", "--json", "--gpus", "1024", "--gpus-per-node", "4"]).output)
    eight = json.loads(CliRunner().invoke(main, ["ettr", "--json", "--gpus", "1024"]).output)
    assert four["nodes"] == 256 and four["job_mttf_hours"] == pytest.approx(eight["job_mttf_hours"] / 2)
    missing = CliRunner().invoke(main, ["ettr", "--from-db", "--db", str(tmp_path / "none.duckdb")])
    assert missing.exit_code != 0 and "goodput run" in missing.output


def test_check_credits_multi_node_results_to_their_hosts_and_no_run_folder(tmp_path):
    """benchmarks/<run>/ holds a 2-node nccl-tests run (its hosts comma-joined in the rows) and an output
    that names no host: neither 'gpu001,gpu002' nor the run folder 'nccl-run1' is an unknown host; a
    result naming a node Slurm does not know still is."""
    src = tmp_path / "src"
    shutil.copytree(DEMO, src)
    run = src / "benchmarks" / "nccl-run1"
    run.mkdir()
    real = (Path(__file__).parent / "fixtures" / "nccl" / "all_gather_perf_2.18.log").read_text()
    (run / "all_gather_perf.log").write_text(real.replace("spark-fb97", "gpu001").replace("spark-4440", "gpu002"))
    (run / "all_reduce_perf.log").write_text("".join(ln for ln in real.splitlines(True) if "Rank" not in ln))
    (run / "results-summary.jsonl").write_text('{"node": "node-77", "timestamp": "2024-03-01T22:00:00Z", '
                                               '"mem-bw/h2d_bw:0": 25.1}\n')
    out = CliRunner().invoke(main, ["check", "--source", str(src), "--json"])
    doc = json.loads(out.output)
    bench = next(c for c in doc["folders"] if c["folder"] == "benchmarks")
    assert bench["unmatched_hosts"] == ["node-77"], bench
    assert not any("nccl-run1" in w for w in doc["warnings"]), doc["warnings"]
    # the output without a host is refused line by line, saying why (not credited to the folder)
    assert any("names no host" in r["reason"] and "all_reduce_perf.log" in r["example"] for r in bench["reject_reasons"])
