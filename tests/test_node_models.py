"""Lemon scores, the node_actions ladder and the exports Slurm consumes (issue 9)."""
from __future__ import annotations

import json
import random
import re
import shutil
import subprocess
from datetime import datetime, timedelta
from pathlib import Path

import jsonschema
import polars as pl
import pytest
from click.testing import CliRunner

from analysis import warehouse
from analysis.derive.metrics import MetricsConfig
from analysis.derive.taxonomy import load
from analysis.ingest.engine import ingest_directory
from analysis.ingest.hosts import compress_hostlist, expand_hostlist
from analysis.nodes import exports
from analysis.nodes.lemons import LabelsError
from analysis.nodes.node_models import ModelsConfig, run_models
from analysis.package_files import demo_source
from analysis.simulate.config import preset
from analysis.simulate.run import simulate
from assets.pure_builds import build_all, steps
from pipelines.cli import main
from tests.shared import private_warehouse, shared_build

DAYS = 60


def _attributed(root: Path) -> None:
    simulate(preset("rsc2", nodes=400, days=DAYS, seed=3, telemetry_jobs=0), root / "src")
    truth = pl.read_csv(root / "src/truth/nodes.csv")
    (root / "labels.csv").write_text(truth.select("host", "is_lemon", confirmed_at=pl.lit(""), component="defect")
                                     .write_csv())
    con = warehouse.connect(root / "w.duckdb")
    ingest_directory(con, root / "src")
    build_all(con, load())
    con.close()


@pytest.fixture(scope="module")
def attributed(tmp_path_factory):
    """400 nodes x 60 days of rsc2 (6 lemons), ingested and attributed (no metrics), with the truth as a
    labels file: built once per run (tests/shared.py); test_as_of_ignores_data_after_it copies it."""
    return shared_build(tmp_path_factory, "rsc2_400x60_s3", _attributed)[0]


@pytest.fixture(scope="module")
def cluster(attributed, tmp_path_factory):
    """That cluster in a warehouse of this module's own, measured too."""
    root = tmp_path_factory.mktemp("models")
    shutil.copy(attributed / "labels.csv", root / "labels.csv")
    con = warehouse.connect(private_warehouse(attributed, root))
    attributed_steps = dict(steps(load()))
    for key, step in steps(load(), MetricsConfig()):  # build_all's metrics, after the above
        if key not in attributed_steps:
            step(con)
    yield con, root, pl.read_csv(root / "src/truth/nodes.csv")
    con.close()


@pytest.fixture(scope="module")
def default_models(cluster, tmp_path_factory):
    """run_models with the defaults (no labels file: Meta's thresholds), once for the tests that read what it
    returns and stores; in a folder of its own: torchtuples' checkpoints must not land in the working directory."""
    con, _, _ = cluster
    here = tmp_path_factory.mktemp("default-models")
    with pytest.MonkeyPatch.context() as mp:
        mp.chdir(here)
        result = run_models(con, ModelsConfig())
    assert not list(here.glob("weight_checkpoint_*"))
    return result


def test_hostlist_compression_round_trips():
    rng = random.Random(7)
    for _ in range(300):
        hosts = {f"{rng.choice(['gpu', 'node', 'a-'])}{str(rng.randint(0, 120)).zfill(rng.choice([0, 3, 4]))}"
                 for _ in range(rng.randint(1, 40))}
        hosts |= {"login", "gpu7-ib"} if rng.random() < 0.3 else set()
        text = compress_hostlist(hosts)
        assert set(expand_hostlist(text)) == hosts, text
    assert compress_hostlist(["gpu0003", "gpu0017", "gpu0018"]) == "gpu[0003,0017-0018]"
    assert compress_hostlist([]) == ""


def test_lemon_classifier_with_labels_is_evaluated_beside_meta_thresholds(cluster, tmp_path):
    con, root, truth = cluster
    result = run_models(con, ModelsConfig(labels_path=root / "labels.csv", model_dir=tmp_path / "models"))
    lemon = result.lemon
    assert lemon.method == "classifier" and lemon.why_thresholds is None
    saved = json.loads(lemon.model_path.with_suffix(".json").read_text())
    assert saved["trained_to"] < str(result.as_of) and saved["n_lemons"] > 0 and saved["window_days"] == 28
    scores = lemon.scores.join(truth.select("host", truth_lemon="is_lemon"), on="host")
    assert scores.height >= 400 and scores["method"].unique().to_list() == ["classifier"]
    mean = dict(scores.group_by("truth_lemon").agg(pl.col("score").mean()).iter_rows())
    assert mean[True] > 5 * mean[False], mean  # lemons score far above the fleet
    ev = {(m, k): v for m, k, v in lemon.evaluation.select("model", "metric", "value").iter_rows()}
    print("lemon evaluation:", {f"{m}.{k}": round(v, 3) for (m, k), v in ev.items()}, mean)
    # both judged on the held-out last window, hosts held out too (the 0.9 bar: test_lemon_accuracy.py)
    for model in ("meta_thresholds", "lemon_classifier"):
        assert {k for m, k in ev if m == model} == {"precision", "recall", "false_positive_rate", "flagged"}
        assert 0 <= ev[(model, "false_positive_rate")] <= 0.05 and ev[(model, "flagged")] <= 0.05 * 400
    stored = con.sql("SELECT DISTINCT model FROM model_evaluation WHERE family = 'lemon'").pl()["model"].to_list()
    assert sorted(stored) == ["lemon_classifier", "meta_thresholds"]
    print("lemon evaluation:", {f"{m}.{k}": round(v, 3) for (m, k), v in ev.items()})
    # issue 22: the next run loads the saved classifier and incident models and only scores
    assert result.incident.trained and saved["fingerprint"] and saved["data_to"] == result.as_of.isoformat()
    files = {p.name: p.stat().st_mtime_ns for p in (tmp_path / "models").iterdir()}
    assert {n.split("-")[0] for n in files} == {"lemon", "incident"}
    tables = ("lemon_scores", "node_risk", "model_evaluation")
    before = [con.sql(f"SELECT * FROM {t} ORDER BY ALL").pl() for t in tables]
    again = run_models(con, ModelsConfig(labels_path=root / "labels.csv", model_dir=tmp_path / "models"))
    assert not again.lemon.model.trained and not again.incident.trained and again.incident_evaluation.height == 0
    assert again.lemon.model.age_days == 0 and again.incident.reason == "saved model is 0.0 days old"
    assert {p.name: p.stat().st_mtime_ns for p in (tmp_path / "models").iterdir()} == files
    # the saved models score exactly as the ones just trained; the evaluation is not rebuilt
    after = [con.sql(f"SELECT * FROM {t} ORDER BY ALL").pl() for t in tables]
    assert all(a.equals(b) for a, b in zip(before, after))
    assert again.lemon.evaluation.select("model", "metric", "value").sort("model", "metric").equals(
        lemon.evaluation.select("model", "metric", "value").sort("model", "metric"))
    # a new warehouse reusing the saved models (a second `goodput demo`) gets the evaluation they were judged by
    con.execute("DROP TABLE model_evaluation")
    run_models(con, ModelsConfig(labels_path=root / "labels.csv", model_dir=tmp_path / "models"))
    assert con.sql("SELECT * FROM model_evaluation ORDER BY ALL").pl().equals(before[2])


def test_without_labels_meta_thresholds_decide_and_say_why(cluster):
    con, root, truth = cluster
    result = run_models(con, ModelsConfig(labels_path=root / "no-such-labels.csv"))
    assert result.lemon.method == "thresholds" and result.lemon.why_thresholds == "no labels file"
    flagged = set(result.lemon.scores.filter("is_lemon")["host"])
    assert flagged and all(len(s) >= 2 for s in result.lemon.scores.filter("is_lemon")["top_signals"])
    assert len(flagged) <= 0.05 * 400 and flagged & set(truth.filter("is_lemon")["host"])


BAD_LABELS = [
    ("host,is_lemon\ngpu0001,true\nnot-a-host,true\n", "line 3: host 'not-a-host' is not in the warehouse"),
    ("host,is_lemon\ngpu0001,maybe\n", "line 2: is_lemon must be true or false"),
    ("host,is_lemon,confirmed_at\ngpu0001,true,yesterday\n", "line 2: confirmed_at 'yesterday'"),
    ("host,is_lemon\ngpu0001,true,extra\n", "line 2: 3 fields, the header has 2"),
    ("name,flag\ngpu0001,true\n", "line 1: the header must name host and is_lemon"),
    ("host,is_lemon\ngpu0001,true\ngpu0001,false\n", "line 3: host 'gpu0001' is labelled again"),
]


def test_bad_labels_name_the_file_and_line_and_change_nothing(cluster, default_models, tmp_path):
    con, root, _ = cluster
    before = [con.sql(f"SELECT * FROM {t} ORDER BY ALL").pl() for t in ("lemon_scores", "node_risk", "node_actions")]
    for text, where in BAD_LABELS:
        bad = tmp_path / "lemons.csv"
        bad.write_text(text)
        with pytest.raises(LabelsError, match=f"lemons.csv: {where}"):
            run_models(con, ModelsConfig(labels_path=bad))
        after = [con.sql(f"SELECT * FROM {t} ORDER BY ALL").pl() for t in ("lemon_scores", "node_risk", "node_actions")]
        assert all(a.equals(b) for a, b in zip(after, before))


def test_exports_round_trip(cluster, default_models, tmp_path):
    con, _, _ = cluster
    result = default_models
    actions = pl.concat([result.actions, result.actions.head(1).with_columns(
        host=pl.lit('gpu1";rm -rf /;"'), action=pl.lit("drain_now"))])  # a hostile name from a log
    slurm = exports.slurm_out_of_service(con, result.as_of)
    paths = exports.write_exports(actions, tmp_path / "exports", result.as_of, "goodput test", slurm=slurm)
    drains = set(result.actions.filter(pl.col("action").is_in(exports.DRAIN_ACTIONS))["host"])
    assert drains, "the simulated cluster has nodes to drain"
    assert set(expand_hostlist(paths["blocklist.txt"].read_text().strip())) == drains
    script = paths["drain.sh"].read_text()
    assert subprocess.run(["bash", "-n", str(paths["drain.sh"])]).returncode == 0
    assert script.splitlines()[0] == "#!/usr/bin/env bash" and "set -euo pipefail" in script and "rm -rf" not in script
    doc = json.loads(paths["blocklist.json"].read_text())
    jsonschema.validate(doc, json.loads(exports.SCHEMA.read_text()))
    assert {e["host"] for e in doc["entries"]} == set(result.actions["host"])
    assert all(e["expires"] > e["since"] for e in doc["entries"])
    drained, left = _drain_script_hosts(script)
    assert drained | left == drains and not drained & left  # every node to drain: drained, or left to Slurm
    # the simulated health checks drained some of them already ('healthcheck: gpu_count: expected 8 GPUs,
    # found 7'): drain.sh keeps Slurm's reason, and the JSON says so
    assert left and left == drains & set(slurm["host"])
    assert left == {e["host"] for e in doc["entries"] if e["slurm_state"]} & drains
    for host, reason in slurm.filter(pl.col("host").is_in(list(left))).select("host", "reason").iter_rows():
        assert f"# left alone: {host} is already " in script and f"(reason: {reason});" in script


PLAN_LINE = re.compile(r"^([A-Za-z0-9._-]+)\|(drain_now|drain_after_job|resume)\|(in_service|out)\|([A-Za-z0-9_+*-]+)\|"
                       r"goodput: (drain_now|drain_after_job|resume) [A-Za-z0-9 _.:=,/()+-]*$")


def _drain_script_hosts(script: str) -> tuple[set[str], set[str]]:
    """(hosts drain.sh drains, hosts it leaves to Slurm), from the plan it carries (host|action|expected live
    state|state in the warehouse|reason, analysis/nodes/scripts.py): a node Slurm had drained or down is planned as
    out, which the script leaves alone, and a comment line names it. The commands are in scontrol's documented
    form (scontrol(1): NodeName=<node> State=<state> Reason=<reason>) with the state each action means:
    drain_after_job DRAIN (running jobs finish), drain_now DOWN (they are stopped)."""
    plan = script[script.index("<<'GOODPUT_PLAN'\n"):script.index("\nGOODPUT_PLAN\n")].splitlines()[1:]
    drained, left = set(), set()
    for line in plan:
        m = PLAN_LINE.match(line)
        assert m, line
        if m[2] == "resume":
            continue
        assert m[5] == m[2] and (m[3] == "out") == (m[4] != "-"), line
        (left if m[3] == "out" else drained).add(m[1])
    assert {ln.split()[3] for ln in script.splitlines() if ln.startswith("# left alone: ")} == left
    assert exports.SLURM_STATE == {"drain_now": "DOWN", "drain_after_job": "DRAIN"}
    for action, state in exports.SLURM_STATE.items():
        assert f'do_{action}() {{ run "${{SCONTROL[@]}}" update "NodeName=$1" State={state} "Reason=$2"; }}' in script
    return drained, left


def test_drain_sh_leaves_nodes_slurm_drained_alone(demo_warehouse, tmp_path):
    """The sample's gpu005 was drained by a health check ('healthcheck: check_hw_ib mlx5_0 port 1 down',
    slurm_events/, still open) and goodput would drain it now: drain.sh must not overwrite that reason."""
    out = CliRunner().invoke(main, ["export", "--db", str(demo_warehouse), "--out", str(tmp_path / "ex")])
    assert out.exit_code == 0, out.output
    script = (tmp_path / "ex" / "exports" / "drain.sh").read_text()  # OUT/exports/, as `goodput run` writes
    drained, left = _drain_script_hosts(script)
    assert left == {"gpu005"} and not drained
    named = [ln for ln in script.split("set -euo pipefail")[1].splitlines() if "gpu005" in ln]
    assert len(named) == 1 and named[0].startswith("gpu005|drain_now|out|DRAIN|goodput: drain_now ")  # its plan line
    assert ("# left alone: gpu005 is already DRAIN in Slurm (reason: healthcheck: check_hw_ib mlx5_0 port 1 down); "
            "goodput would drain_now it") in script
    assert "1 node(s) to drain, 1 of them already drained or down in Slurm (left alone)" in script
    assert subprocess.run(["bash", "-n", str(tmp_path / "ex" / "exports" / "drain.sh")]).returncode == 0
    # the other exports say the same: the hostlist still keeps jobs off it, the JSON names Slurm's state and reason
    assert expand_hostlist((tmp_path / "ex" / "exports" / "blocklist.txt").read_text().strip()) == ("gpu005",)
    doc = json.loads((tmp_path / "ex" / "exports" / "blocklist.json").read_text())
    jsonschema.validate(doc, json.loads(exports.SCHEMA.read_text()))
    entry = next(e for e in doc["entries"] if e["host"] == "gpu005")
    assert (entry["action"], entry["slurm_state"], entry["slurm_reason"]) == (
        "drain_now", "DRAIN", "healthcheck: check_hw_ib mlx5_0 port 1 down")
    # gpu003's DOWN period ended (2024-03-02 10:00): it is back in service
    assert all(e["slurm_state"] is None for e in doc["entries"] if e["host"] != "gpu005")
    # the report's node-action table says what drain.sh does (the same rule, analysis/nodes/exports.py with_slurm)
    html = (demo_warehouse.parent / "out" / "reports" / "latest.html").read_text()
    table = html[html.index('<table id="node-actions">'):]
    rows = {r.split("</td>")[0]: r for r in table[:table.index("</table>")].split("<tr><td>")[1:]}
    assert ("<td>left alone: already drained or down in Slurm (DRAIN: healthcheck: check_hw_ib mlx5_0 port 1 down); "
            "goodput would drain now</td>") in rows["gpu005"]
    assert not any("left alone" in r for h, r in rows.items() if h != "gpu005")
    assert "1 of them already drained or down in Slurm, which drain.sh leaves alone" in html


def test_drain_sh_comments_stay_one_line():
    """A reason from the logs is quoted in a comment: a newline in it must not start a command line."""
    actions = pl.DataFrame({"host": ["gpu1", "gpu2", "gpu3"], "action": ["drain_now", "drain_after_job", "drain_now"],
                            "cause": ["xid", "risk", "lemon"], "score": [1.0, 0.6, 0.9]})
    slurm = pl.DataFrame({"host": ["gpu1"], "state": ["DOWN+DRAIN"], "reason": ["bad\nscontrol update NodeName=gpu9"]})
    script = exports.drain_script(actions, "test", slurm)
    drained, left = _drain_script_hosts(script)
    assert (drained, left) == ({"gpu2", "gpu3"}, {"gpu1"})
    assert "gpu3|drain_now|in_service|-|goodput: drain_now lemon score=0.90" in script.splitlines()
    assert "gpu2|drain_after_job|in_service|-|goodput: drain_after_job risk score=0.60" in script.splitlines()
    assert not any(ln.startswith("scontrol") for ln in script.splitlines())


def test_as_of_ignores_data_after_it(cluster, attributed, tmp_path):
    """Scores and actions as of a day are the same whether or not later days are in the warehouse."""
    _, root, _ = cluster
    start = datetime(2024, 3, 1)
    as_of = start + timedelta(days=30)
    early = tmp_path / "early"
    for path in (root / "src").rglob("*"):
        if path.is_file() and "truth" not in path.parts:
            day = next((p for p in path.name.split("-") if p[:1].isdigit()), None)
            dated = path.stem.rsplit("-", 3)[-3:]
            when = datetime.strptime("-".join(dated), "%Y-%m-%d") if len(dated) == 3 and all(
                d.isdigit() for d in dated) else None
            # node event logs cut exactly at as_of (incidents going on at midnight differ); accounting
            # dumps a job lifetime later, so both know every job submitted before as_of
            cut = as_of + timedelta(days=8) if path.parent.name == "slurm" else as_of
            if when is None or when < cut:
                target = early / path.relative_to(root / "src")
                target.parent.mkdir(parents=True, exist_ok=True)
                shutil.copy(path, target)
            del day
    results = []
    for src in (early, root / "src"):
        if src == early:
            con = warehouse.connect(tmp_path / f"{src.name}.duckdb")
            ingest_directory(con, src)
            build_all(con, load())
        else:  # every day: the shared build did the same ingest and build_all
            con = warehouse.connect(private_warehouse(attributed, tmp_path / "full"))
        run_models(con, ModelsConfig(labels_path=root / "labels.csv"), as_of)
        results.append([con.sql(f"SELECT * EXCLUDE ({drop}) FROM {t} ORDER BY ALL").pl()
                        for t, drop in (("lemon_scores", "score"), ("node_actions", "score"),
                                        ("lemon_features", "as_of"), ("node_risk", "p_incident, expected_days_to_incident"))]
                       + [con.sql("SELECT host, horizon_days, model, round(p_incident, 6) AS p, "
                                  "round(expected_days_to_incident, 4) AS d FROM node_risk ORDER BY ALL").pl()])
        con.close()
    for a, b in zip(*results):
        assert a.height > 0 and a.equals(b)


def test_cli_models_and_export(cluster, tmp_path):
    con, root, _ = cluster
    con.execute("CHECKPOINT")  # the copy below must hold every table
    db = tmp_path / "w.duckdb"
    shutil.copy(root / "w.duckdb", db)
    runner = CliRunner()
    out = runner.invoke(main, ["models", "--db", str(db), "--labels", str(root / "labels.csv")])
    assert out.exit_code == 0, out.output
    assert "classifier trained on the labels" in out.output and "Evaluation" in out.output
    out = runner.invoke(main, ["export", "--db", str(db), "--out", str(tmp_path / "ex")])
    assert out.exit_code == 0, out.output
    assert (tmp_path / "ex" / "exports" / "blocklist.txt").exists() and (tmp_path / "ex" / "exports" / "drain.sh").exists()
    bad = tmp_path / "bad.csv"
    bad.write_text("host,is_lemon\nnope,true\n")
    out = runner.invoke(main, ["models", "--db", str(db), "--labels", str(bad)])
    assert out.exit_code == 1 and "bad.csv: line 2: host 'nope' is not in the warehouse" in out.output
    assert "Traceback" not in out.output
    empty = tmp_path / "empty.duckdb"
    warehouse.connect(empty).close()
    out = runner.invoke(main, ["models", "--db", str(empty)])
    assert out.exit_code == 1 and "run `goodput run --source DIR` first" in out.output


def test_models_as_of_outside_the_data_is_refused_and_an_older_one_keeps_the_current_actions(cluster, tmp_path):
    """--as-of after the data (or before its first day) exits 2 with the data's span and changes nothing; an
    as-of inside the data but older than the newest decisions (a backtest) goes to node_action_history only."""
    con, root, _ = cluster
    con.execute("CHECKPOINT")
    db = tmp_path / "w.duckdb"
    shutil.copy(root / "w.duckdb", db)
    runner = CliRunner()
    assert runner.invoke(main, ["models", "--db", str(db)]).exit_code == 0
    check = warehouse.connect(db)
    try:
        first, last = check.execute("SELECT min(as_of), max(as_of) FROM node_action_history").fetchall()[0]
        current = check.sql("SELECT * FROM node_actions ORDER BY host").pl()
    finally:
        check.close()
    assert first == last and current.height and (current["as_of"] == last).all()
    for day in ("2031-01-01", "2023-01-01"):
        out = runner.invoke(main, ["models", "--db", str(db), "--as-of", day])
        assert out.exit_code == 2 and f"{day} is outside the data: it runs from 2024-03-01 to " in out.output
        assert "--force to run anyway" in out.output and "Traceback" not in out.output
    older = last - timedelta(days=10)
    out = runner.invoke(main, ["models", "--db", str(db), "--as-of", f"{older:%Y-%m-%d}"])
    assert out.exit_code == 0, out.output
    check = warehouse.connect(db)
    try:
        kept = check.sql("SELECT * FROM node_actions ORDER BY host").pl()
        as_ofs = [r[0] for r in check.execute("SELECT DISTINCT as_of FROM node_action_history ORDER BY 1").fetchall()]
    finally:
        check.close()
    assert kept.equals(current) and as_ofs == [older, last]


def test_incident_models_are_evaluated_on_a_later_time_span(cluster, default_models):
    con, _, _ = cluster
    result = default_models
    ev = result.incident_evaluation
    table = {(m, k): v for m, k, v in ev.select("model", "metric", "value").iter_rows()}
    models = {"cox_time", "exponential", "exponential_per_incident_count", "exponential_per_uptime_hour"}
    assert {m for m, _ in table} == models
    print("incident evaluation:", {f"{m}.{k}": round(v, 3) for (m, k), v in sorted(table.items())})
    assert table[("exponential", "concordance_td")] == 0.5  # one curve for every node orders nothing
    for metric in ("concordance_td", "anubis_accuracy"):  # issue 9: Cox-Time beats every baseline on both
        best_baseline = max(table[(m, metric)] for m in models - {"cox_time"})
        assert table[("cox_time", metric)] > best_baseline, metric
    for m in models:
        assert 0 <= table[(m, "anubis_accuracy")] <= 1 and 0 < table[(m, "integrated_brier_score")] < 0.25
    split = ev["split"][0]
    assert split.startswith("train<") and ev["n"].min() > 100
    risk = result.risk
    assert set(risk["horizon_days"].unique()) == {1, 7, 30} and risk["model"].n_unique() == 4
    assert risk.filter(pl.col("model") == "cox_time").height == 3 * risk["host"].n_unique()
    p = risk.filter(pl.col("model") == "cox_time").pivot(on="horizon_days", index="host", values="p_incident")
    assert ((p["1"] <= p["7"] + 1e-9) & (p["7"] <= p["30"] + 1e-9)).all()  # risk grows with the horizon
    stored = con.sql("SELECT count(*) FROM model_evaluation WHERE family = 'incident'").fetchall()[0][0]
    assert stored == ev.height


def test_report_shows_what_the_blocklist_would_do(cluster, default_models, tmp_path):
    from reports.render import render_report

    con, _, _ = cluster
    result = default_models  # the tables hold its actions: the tests between copy the warehouse
    path = render_report(con, (result.as_of - timedelta(days=1)).date(), tmp_path)
    html = path.read_text()
    section = html[html.index("<h2>Nodes to act on</h2>"):html.index("<h2>Data quality</h2>")]
    assert "Meta-style thresholds (no usable labels file)" in section
    drains = result.actions.filter(pl.col("action").is_in(exports.DRAIN_ACTIONS))["host"].to_list()
    assert f"--exclude={compress_hostlist(drains)}" in section
    assert 'id="c-risk"' in section and '"risk": {' in html  # the chart container and its spec
    for model in ("cox time", "exponential", "exponential per incident count", "exponential per uptime hour"):
        assert f"<td>{model}</td>" in section
    assert all(f"<td>{h}</td>" in section for h in result.lemon.scores.sort("score", descending=True)["host"][:3])


def test_selector_picks_the_best_reduction_per_minute_until_under_target():
    from analysis.nodes.selector import Benchmark, load_catalog, select

    catalog = [Benchmark("slow_gpu", 30, {"gpu": 0.9}), Benchmark("fast_gpu", 5, {"gpu": 0.5}),
               Benchmark("net", 5, {"network": 0.8}), Benchmark("useless", 1, {})]
    steps = select(0.4, {"gpu": 0.75, "network": 0.25}, catalog, target=0.05)
    # per minute: fast_gpu 0.3*0.5/5 = 0.030 > net 0.1*0.8/5 = 0.016 > slow_gpu 0.27/30 = 0.009
    assert [s["benchmark"] for s in steps][:2] == ["fast_gpu", "net"]
    assert steps[-1]["p_after"] <= 0.05 and all(s["benchmark"] != "useless" for s in steps)
    assert all(abs(s["p_before"] - s["p_after"] - s["reduction"]) < 1e-12 for s in steps)
    assert select(0.01, {"gpu": 1.0}, catalog, target=0.05) == []  # already under the target
    assert {b.name for b in load_catalog()} >= {"dcgm_diag_r3", "nccl_all_reduce"}


def test_goodput_run_writes_the_exports(tmp_path):
    from pipelines.runner import run_pipeline

    out = tmp_path / "out"
    result = run_pipeline(demo_source(), tmp_path / "w.duckdb", out)
    assert result.success, result.report()
    names = {p.name for p in (out / "exports").iterdir()}
    assert {"blocklist.txt", "drain.sh", "blocklist.json", "validation_plan.json"} <= names
    jsonschema.validate(json.loads((out / "exports" / "blocklist.json").read_text()),
                        json.loads(exports.SCHEMA.read_text()))


def test_lemon_cut_is_never_zero():
    import numpy as np

    from analysis.nodes.lemons import best_threshold

    assert best_threshold(np.zeros(10), np.array([1, 0] * 5)) == 0.5  # no fold predicted: never "every node"
    assert best_threshold(np.array([0.0, 0.2, 0.9, 0.8]), np.array([0, 0, 1, 1])) == 0.8


def test_a_held_out_span_without_a_comparable_pair_gives_an_undefined_concordance_not_a_crash():
    """A small cluster's few weeks can hold out one failure and nothing that outlives it: pycox divides by zero
    there (it withheld node_actions of a 10-node simulated cluster)."""
    import numpy as np

    from analysis.nodes.incident_model import _metrics

    grid = np.linspace(0, 24, 25)
    test = pl.DataFrame({"duration_h": [5.0], "event": [1]})
    surv = np.linspace(1.0, 0.2, 25).reshape(-1, 1)
    metrics = _metrics(surv, grid, test, 24.0)
    assert np.isnan(metrics["concordance_td"]) and 0.0 <= metrics["anubis_accuracy"] <= 1.0


def test_drain_sh_names_the_cluster_when_the_warehouse_has_one():
    """Host names repeat across clusters: a drain line names its cluster (scontrol(1) --clusters), the JSON too."""
    actions = pl.DataFrame({"host": ["gpu0003"], "action": ["drain_now"], "reason": ["r"], "cause": ["lemon"],
                            "score": [0.9]})
    script = exports.drain_script(actions, "header", cluster="rsc2")
    lines = script.splitlines()
    assert "SCONTROL=(scontrol --clusters=rsc2)" in lines and "SINFO=(sinfo --clusters=rsc2)" in lines
    assert "gpu0003|drain_now|in_service|-|goodput: drain_now lemon score=0.90" in lines
    assert "--clusters" not in exports.drain_script(actions, "header")


def test_saved_incident_models_score_the_status_at_the_end_alone(cluster, default_models):
    """A nightly that loads the incident models builds only each node's status at the as-of (its cost does not
    grow with the history): the same rows as the full samples' last status."""
    from analysis.nodes import incident_model

    con, _, _ = cluster
    as_of = default_models.as_of
    end = incident_model.build_samples(con, as_of, only_end=True)
    full = incident_model.build_samples(con, as_of)  # last: the table as the models' run left it
    assert full["t"].n_unique() > 1 and end["t"].unique().to_list() == [as_of]
    assert end.height == default_models.risk["host"].n_unique()
    assert end.equals(full.filter(pl.col("t") == as_of))


def test_cox_time_samples_the_controls_pycox_does():
    import numpy as np
    import torch
    from pycox.models.data import CoxTimeDataset

    from analysis.nodes.coxtime_data import SortedCoxTimeDataset

    rng = np.random.default_rng(0)
    durations = np.sort(rng.integers(1, 40, 500)).astype("float32")  # ties, as pycox sorts them before
    events = (rng.random(500) < 0.4).astype("float32")
    x = rng.random((500, 4)).astype("float32")
    theirs, ours = CoxTimeDataset(x, durations, events), SortedCoxTimeDataset(x, durations, events)
    for index in (rng.permutation(len(theirs))[:64], [3], 5):  # a batch, as the data loader asks
        np.random.seed(7)
        a = theirs[index]
        np.random.seed(7)
        b = ours[index]
        assert all(torch.equal(p, q) for p, q in zip(a.flatten(), b.flatten())) and len(a.flatten()) == 4
