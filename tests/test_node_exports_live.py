"""drain.sh and kubectl.sh check before they act, every time they are run (issue 33; docs/node-exports.md).

The scripts are run for real (bash) against fake scontrol, sinfo and kubectl put first on PATH: each prints the
live state a test wrote to a file and appends every call to a log, so a test sees every command a script ran. The
real kubectl (/usr/bin/kubectl) is shadowed, and KUBECONFIG names a file that does not exist: nothing here can reach
a cluster."""
from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from datetime import datetime, timedelta, timezone
from pathlib import Path

import duckdb
import jsonschema
import polars as pl
import pytest
from click.testing import CliRunner

from analysis import sql, warehouse
from analysis.nodes import exports, scripts
from pipelines.cli import main

AS_OF = datetime(2024, 3, 10)
FAKE = r"""#!/usr/bin/env bash
# a stand-in for {tool}: prints the live state the test wrote, logs every call
printf '%s\n' "{tool} $*" >>"$FAKE_LOG"
case "{tool} $*" in
  "scontrol "*"show node"*) [[ -e $FAKE_DIR/scontrol.fail ]] && exit 1; cat "$FAKE_DIR/scontrol.out" ;;
  "sinfo "*) cat "$FAKE_DIR/sinfo.out" ;;
  "kubectl get nodes"*) cat "$FAKE_DIR/kubectl.out" ;;
  "scontrol "*"update "*|"kubectl cordon "*|"kubectl uncordon "*|"kubectl taint "*|"kubectl annotate "*) exit 0 ;;
  *) echo "fake {tool}: unexpected call: $*" >&2; exit 64 ;;
esac
"""
READS = re.compile(r"^(scontrol .*show node|sinfo |kubectl get nodes )")


class Live:
    """The fake tools, their canned live state and the log of every call."""

    def __init__(self, root: Path):
        self.root, self.bin, self.log = root, root / "bin", root / "calls.log"
        self.bin.mkdir(parents=True)
        for tool in ("scontrol", "sinfo", "kubectl"):
            (self.bin / tool).write_text(FAKE.replace("{tool}", tool))
            (self.bin / tool).chmod(0o755)
        self.log.write_text("")
        self.env = {"PATH": f"{self.bin}:/usr/bin:/bin", "FAKE_LOG": str(self.log), "FAKE_DIR": str(root),
                    "HOME": str(root), "KUBECONFIG": str(root / "no-such-kubeconfig"), "LC_ALL": "C"}
        for tool in ("scontrol", "sinfo", "kubectl"):  # never the real ones
            assert shutil.which(tool, path=self.env["PATH"]) == str(self.bin / tool)

    def scontrol(self, *nodes: tuple[str, str, str | None], fail: bool = False) -> None:
        """`scontrol --oneline show node`: (host, State=, Reason= or None) per node, as Slurm prints them."""
        lines = [f"NodeName={h} Arch=x86_64 CoresPerSocket=48 CPUAlloc=0 State={s} ThreadsPerCore=2 "
                 f"Partitions=gpu CfgTRES=cpu=96,gres/gpu=8"
                 + (f" Reason={r} [root@2024-03-10T08:00:00]" if r else "") for h, s, r in nodes]
        (self.root / "scontrol.out").write_text("\n".join(lines) + "\n")
        if fail:
            (self.root / "scontrol.fail").write_text("")

    def sinfo(self, *nodes: tuple[str, str, str | None]) -> None:
        """`sinfo -N -h -o '%N|%T|%E'`: one line per node and partition, the state in sinfo's long lower case."""
        lines = [f"{h}|{s}|{r or 'none'}" for h, s, r in nodes for _partition in ("gpu", "debug")]
        (self.root / "sinfo.out").write_text("\n".join(lines) + "\n")

    def kubectl(self, *nodes: tuple[str, bool, str, str]) -> None:
        """kubectl.sh's jsonpath: name|spec.unschedulable|taints key=value:effect,...|Ready status."""
        lines = [f"{n}|{'true' if cordoned else ''}|{taints}|{ready}" for n, cordoned, taints, ready in nodes]
        (self.root / "kubectl.out").write_text("\n".join(lines) + "\n")

    def run(self, script: Path, *args: str) -> subprocess.CompletedProcess:
        self.log.write_text("")
        return subprocess.run(["bash", str(script), *args], env=self.env, capture_output=True, text=True,
                              timeout=60, cwd=self.root)

    def calls(self) -> list[str]:
        return self.log.read_text().splitlines()

    def changes(self) -> list[str]:
        """The calls that would change a node (every call but the live-state reads)."""
        return [c for c in self.calls() if not READS.match(c)]


@pytest.fixture
def live(tmp_path) -> Live:
    return Live(tmp_path / "live")


def _actions(*rows: tuple[str, str, str, float]) -> pl.DataFrame:
    n = len(rows)
    return pl.DataFrame({
        "host": [r[0] for r in rows], "action": [r[1] for r in rows], "cause": [r[2] for r in rows],
        "score": [r[3] for r in rows], "reason": [f"{r[2]} on {r[0]}" for r in rows],
        "since": [AS_OF - timedelta(days=2)] * n, "expires": [AS_OF + timedelta(days=12)] * n,
        "suggest_ticket": [r[1] == "drain_now" for r in rows], "suggested_component": [None] * n,
        "event_times": [[AS_OF - timedelta(days=2)]] * n, "jobs": [["1001"]] * n, "tickets": [[]] * n,
        "as_of": [AS_OF] * n}, schema_overrides={"suggested_component": pl.Utf8, "tickets": pl.List(pl.Utf8)})


def _slurm(*rows: tuple[str, str, str]) -> pl.DataFrame:
    return pl.DataFrame({"host": [r[0] for r in rows], "state": [r[1] for r in rows], "reason": [r[2] for r in rows]},
                        schema={"host": pl.Utf8, "state": pl.Utf8, "reason": pl.Utf8})


def _export(out: Path, actions: pl.DataFrame, platform: str = "slurm", **kw) -> dict[str, Path]:
    kw.setdefault("fleet", 100)
    return exports.write_exports(actions, out, AS_OF, "goodput test", platform=platform, **kw)


SCRIPT = {"slurm": "drain.sh", "kubernetes": "kubectl.sh"}


def _in_service(platform: str, live: Live, *hosts: str, out_by_goodput: tuple[str, ...] = ()) -> None:
    """Every host in service, but those goodput has out (its tag)."""
    if platform == "slurm":
        live.scontrol(*[(h, "IDLE", None) for h in hosts],
                      *[(h, "IDLE+DRAIN", "goodput: drain_now xid score=0.95") for h in out_by_goodput])
    else:
        live.kubectl(*[(h, False, "", "True") for h in hosts],
                     *[(h, True, f"{scripts.K8S_TAINT_KEY}=drain_now:NoSchedule,", "True") for h in out_by_goodput])


def test_a_node_repaired_drained_or_rebooted_since_the_export_is_skipped(live, tmp_path):
    """The export planned against the warehouse's state; the script acts only where the live state is still that."""
    actions = _actions(("gpu01", "drain_now", "xid", 0.934), ("gpu02", "drain_after_job", "risk", 0.6),
                       ("gpu03", "drain_now", "lemon", 0.9), ("gpu04", "drain_after_job", "risk", 0.7))
    slurm = _slurm(("gpu02", "DRAIN", "healthcheck: check_hw_ib mlx5_0 port 1 down"))  # out when exported
    paths = _export(tmp_path / "ex", actions, slurm=slurm, cluster="rsc1")
    script = paths["drain.sh"].read_text()
    plan = script[script.index("<<'GOODPUT_PLAN'\n"):script.index("\nGOODPUT_PLAN\n")].splitlines()[1:]
    assert plan == ["gpu01|drain_now|in_service|-|goodput: drain_now xid score=0.93",
                    "gpu03|drain_now|in_service|-|goodput: drain_now lemon score=0.90",
                    "gpu02|drain_after_job|out|DRAIN|goodput: drain_after_job risk score=0.60",
                    "gpu04|drain_after_job|in_service|-|goodput: drain_after_job risk score=0.70"]
    live.scontrol(("gpu01", "IDLE", None),
                  ("gpu02", "IDLE", None),  # repaired and resumed since the export
                  ("gpu03", "MIXED+DRAIN", "alice: reseating the GPU baseboard"),  # a person drained it since
                  ("gpu04", "IDLE+REBOOT_ISSUED", None),  # rebooting now
                  ("gpu09", "ALLOCATED", None))
    done = live.run(paths["drain.sh"], "--apply")
    assert done.returncode == 0, done.stderr
    assert live.changes() == ["scontrol --clusters=rsc1 update NodeName=gpu01 State=DOWN "
                              "Reason=goodput: drain_now xid score=0.93"]
    assert live.calls()[0] == "scontrol --clusters=rsc1 --oneline show node"
    out = done.stdout
    assert "skip gpu02: it was DRAIN when exported and is IDLE now (repaired or resumed since)" in out
    assert "left alone gpu03: already out now (MIXED+DRAIN) (reason: alice: reseating the GPU baseboard)" in out
    assert "skip gpu04: live state IDLE+REBOOT_ISSUED" in out
    assert "done: 1 drained, 0 resumed, 2 skipped, 0 command(s) failed" in out
    logged = (tmp_path / "ex" / "drain.log").read_text()  # every change applied is logged, with who ran it
    assert "ran: scontrol --clusters=rsc1 update NodeName=gpu01 State=DOWN 'Reason=goodput: drain_now xid " in logged


@pytest.mark.parametrize("source", ["scontrol", "sinfo"])
def test_a_humans_drain_is_never_resumed_goodputs_validated_one_is(live, tmp_path, source):
    actions = _actions(("gpu01", "watch", "xid", 0.2))
    resume = pl.DataFrame({"host": ["gpu05", "gpu06", "gpu07"],
                           "evidence": ["RMA 4411 closed; dcgm_diag_r3 passed 2024-03-09"] * 3})
    paths = _export(tmp_path / "ex", actions, resume=resume,
                    slurm=_slurm(("gpu05", "DRAIN", "goodput: drain_now xid score=0.91")))
    nodes = [("gpu05", "IDLE+DRAIN", "goodput: drain_now xid score=0.91"),
             ("gpu06", "IDLE+DRAIN", "alice: PSU swap pending, do not resume"),  # the same node list, a person's drain
             ("gpu07", "IDLE", None)]  # already back
    if source == "scontrol":
        live.scontrol(*nodes)
    else:  # scontrol cannot be asked: sinfo's long states (drained, draining, down*) are read instead
        live.scontrol(fail=True)
        live.sinfo(*[(h, {"IDLE+DRAIN": "drained", "IDLE": "idle"}[s], r) for h, s, r in nodes])
    done = live.run(paths["drain.sh"], "--apply")
    assert done.returncode == 0, done.stderr
    assert live.changes() == ["scontrol update NodeName=gpu05 State=RESUME"]
    assert "left alone gpu06: out" in done.stdout and "not under goodput's tag" in done.stdout
    assert "nothing to do for gpu07: already back in service" in done.stdout
    assert any(c.startswith("sinfo -N -h -o") for c in live.calls()) == (source == "sinfo")


def test_kubectl_sh_cordons_taints_and_uncordons_only_its_own(live, tmp_path):
    actions = _actions(("gpu01", "drain_now", "xid", 0.93), ("gpu02", "drain_after_job", "risk", 0.6),
                       ("gpu03", "drain_after_job", "risk", 0.6), ("gpu04", "drain_after_job", "risk", 0.6))
    resume = pl.DataFrame({"host": ["gpu05", "gpu06"], "evidence": ["repaired; dcgm_diag_r3 passed"] * 2})
    paths = _export(tmp_path / "ex", actions, platform="kubernetes", resume=resume)
    assert set(paths) >= {"kubectl.sh", "node_conditions.json", "blocklist.json"} and "drain.sh" not in paths
    text = paths["kubectl.sh"].read_text()
    assert "the running pods are NOT\n# evicted (the export was written without --no-execute" in text
    taint = scripts.K8S_TAINT_KEY
    live.kubectl(("gpu01", False, "nvidia.com/gpu=present:NoSchedule,", "True"),
                 ("gpu02", False, "", "True"),
                 ("gpu03", True, "", "True"),  # cordoned by someone since the export: left alone
                 ("gpu04", False, "", "Unknown"),  # its kubelet stopped reporting: not the state planned against
                 ("gpu05", True, f"{taint}=drain_now:NoSchedule,", "True"),  # goodput's: resumed
                 ("gpu06", True, "", "True"))  # a person's cordon: never uncordoned
    done = live.run(paths["kubectl.sh"], "--apply")
    assert done.returncode == 0, done.stderr
    assert live.calls()[0].startswith("kubectl get nodes -o jsonpath={range .items[*]}")
    # the time of a drain beside its reason (goodput.io/drained-at): what ties the cordon to goodput when the Node
    # objects are read back (tests/test_k8s_node_states.py)
    at = re.compile(r" goodput\.io/drained-at=(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ) ")
    changes = live.changes()
    stamps = [at.search(c) for c in changes if "drained-at=" in c]
    assert len(stamps) == 2 and all(stamps)
    assert [at.sub(" goodput.io/drained-at=T ", c) for c in changes] == [
        f"kubectl taint nodes gpu05 {taint}-", "kubectl annotate node gpu05 goodput.io/reason- goodput.io/drained-at-",
        "kubectl uncordon gpu05",
        "kubectl cordon gpu01", f"kubectl taint nodes gpu01 {taint}=drain_now:NoSchedule --overwrite",
        "kubectl annotate node gpu01 goodput.io/reason=goodput: drain_now xid score=0.93 goodput.io/drained-at=T "
        "--overwrite",
        "kubectl cordon gpu02", f"kubectl taint nodes gpu02 {taint}=drain_after_job:NoSchedule --overwrite",
        "kubectl annotate node gpu02 goodput.io/reason=goodput: drain_after_job risk score=0.60 "
        "goodput.io/drained-at=T --overwrite"]
    assert "left alone gpu03: already out now (cordoned)" in done.stdout
    assert "skip gpu04: live state schedulable,Ready=Unknown" in done.stdout
    assert "left alone gpu06: out (cordoned) but not under goodput's tag" in done.stdout
    # NoExecute only when asked for at export time
    paths = _export(tmp_path / "ex2", actions, platform="kubernetes", no_execute=True)
    assert "evicted now\n# (written with `goodput export --no-execute`)" in paths["kubectl.sh"].read_text()
    live.kubectl(*[(f"gpu0{i}", False, "", "True") for i in range(1, 5)])
    assert live.run(paths["kubectl.sh"], "--apply").returncode == 0
    assert f"kubectl taint nodes gpu01 {taint}=drain_now:NoExecute --overwrite" in live.changes()
    assert f"kubectl taint nodes gpu02 {taint}=drain_after_job:NoSchedule --overwrite" in live.changes()


@pytest.mark.parametrize("platform", ["slurm", "kubernetes"])
def test_an_export_older_than_its_age_limit_refuses(live, tmp_path, platform):
    actions = _actions(("gpu01", "drain_now", "xid", 0.93))
    old = datetime.now(timezone.utc) - timedelta(hours=30)  # written 30 h ago: no sleeping
    script = _export(tmp_path / "ex", actions, platform, created=old)[SCRIPT[platform]]
    _in_service(platform, live, "gpu01")
    refused = live.run(script, "--apply")
    assert refused.returncode == 3 and "30 h old" in refused.stderr and "over --max-age 24 h" in refused.stderr
    assert live.calls() == []  # refused before reading anything
    assert live.run(script, "--max-age", "48").returncode == 0  # the operator's limit
    stale = live.run(script, "--stale-ok")
    assert stale.returncode == 0 and "WARNING: this export is 30 h old" in stale.stdout
    assert live.changes() == []  # a dry run still
    assert live.run(_export(tmp_path / "ex72", actions, platform, created=old, max_age_hours=72)[SCRIPT[platform]]
                    ).returncode == 0  # `goodput export --max-age 72`


@pytest.mark.parametrize("platform", ["slurm", "kubernetes"])
def test_the_drain_cap_holds_at_run_time(live, tmp_path, platform):
    """20 nodes: the cap is max(5, 10% of 20) = 5. The export drains 2 (within it when written), but 4 nodes are
    out under goodput's tag by now: 6 would be out, and the script refuses unless forced, with who and why logged."""
    actions = _actions(("gpu01", "drain_now", "xid", 0.93), ("gpu02", "drain_after_job", "risk", 0.6))
    paths = _export(tmp_path / "ex", actions, platform, fleet=20)
    script, log = paths[SCRIPT[platform]], tmp_path / "ex" / SCRIPT[platform].replace(".sh", ".log")
    _in_service(platform, live, "gpu01", "gpu02", "gpu03", out_by_goodput=("gpu11", "gpu12", "gpu13", "gpu14"))
    refused = live.run(script, "--apply")
    assert refused.returncode == 4 and "6 nodes would be out under goodput's tag, over the cap of 5" in refused.stderr
    assert live.changes() == [] and not log.exists()
    assert live.run(script, "--force-cap", "--apply").returncode == 2  # no why, no force
    forced = live.run(script, "--apply", "--force-cap", "--why", "INC-7 reboot wave: drain them all")
    assert forced.returncode == 0, forced.stderr
    assert "FORCED past the cap by " in forced.stdout and "INC-7 reboot wave: drain them all" in forced.stdout
    changed = " ".join(live.changes())
    for host in ("gpu01", "gpu02"):
        assert (f"NodeName={host} State=" if platform == "slurm" else f"kubectl cordon {host}") in changed
    entries = log.read_text().splitlines()
    forced_line = next(e for e in entries if "forced past the cap" in e)
    assert forced_line.split("\t")[1] == subprocess.run(["id", "-un"], capture_output=True, text=True).stdout.strip()
    assert "6 > 5" in forced_line and forced_line.endswith("INC-7 reboot wave: drain them all")
    # within the cap once goodput's own drains are resumed in the same run
    resume = pl.DataFrame({"host": ["gpu11", "gpu12"], "evidence": ["repaired, validated"] * 2})
    script = _export(tmp_path / "ex2", actions, platform, fleet=20, resume=resume)[SCRIPT[platform]]
    assert live.run(script).returncode == 0  # 4 - 2 + 2 = 4 <= 5


@pytest.mark.parametrize("platform", ["slurm", "kubernetes"])
def test_a_dry_run_makes_no_change(live, tmp_path, platform):
    actions = _actions(("gpu01", "drain_now", "xid", 0.93), ("gpu02", "drain_after_job", "risk", 0.6))
    resume = pl.DataFrame({"host": ["gpu11"], "evidence": ["validated"]})
    script = _export(tmp_path / "ex", actions, platform, resume=resume)[SCRIPT[platform]]
    _in_service(platform, live, "gpu01", "gpu02", out_by_goodput=("gpu11",))
    done = live.run(script)
    assert done.returncode == 0, done.stderr
    assert live.calls() and live.changes() == []  # it read the live state, and changed nothing
    assert done.stdout.count("  would run: ") == (3 if platform == "slurm" else 9)
    assert "dry run: 2 to drain, 1 to resume, 0 skipped; nothing changed (--apply to act)" in done.stdout
    assert not list((tmp_path / "ex").glob("*.log"))
    assert subprocess.run(["bash", "-n", str(script)]).returncode == 0
    assert live.run(script, "--help").stdout.startswith("Usage: ./" + SCRIPT[platform])
    assert live.run(script, "--bogus").returncode == 2


def _warehouse(path: Path, hosts: int, actions: pl.DataFrame) -> Path:
    """A warehouse holding only what `goodput export` reads: the fleet (topology) and node_actions."""
    con = warehouse.connect(path)
    try:
        con.executemany("INSERT INTO topology (host) VALUES (?)", [[f"gpu{i:02d}"] for i in range(hosts)])
        sql.run(con, "schema/jobs")
        con.register("staged_node_actions", actions)
        sql.run(con, "models/store_node_actions")
        con.unregister("staged_node_actions")
    finally:
        con.close()
    return path


def test_export_force_needs_why_and_records_who_and_why(live, tmp_path):
    actions = _actions(*[(f"gpu{i:02d}", "drain_now", "xid", 0.8649) for i in range(7)])  # 7 of 20: limit 5
    db = _warehouse(tmp_path / "w.duckdb", 20, actions)
    top = tmp_path / "ex"
    out = top / "exports"  # --out is the output folder; the files go in OUT/exports/, as `goodput run` writes them
    runner = CliRunner()
    refused = runner.invoke(main, ["export", "--db", str(db), "--out", str(top)])
    assert refused.exit_code == 1 and "7 of 20 nodes would be drained, over the limit of 5" in refused.output
    assert "--force --why TEXT" in refused.output and not out.exists()
    no_why = runner.invoke(main, ["export", "--db", str(db), "--out", str(top), "--force"])
    assert no_why.exit_code == 2 and "--force needs --why" in no_why.output and not out.exists()
    forced = runner.invoke(main, ["export", "--db", str(db), "--out", str(top), "--force", "--platform", "both",
                                  "--why", "INC-42: the whole rack lost cooling"])
    assert forced.exit_code == 0, forced.output
    user = exports.os_user()
    con = duckdb.connect(str(db), read_only=True)
    rows = con.execute("SELECT os_user, why, drains, drain_limit, fleet, platform, out_dir FROM export_overrides"
                       ).fetchall()
    con.close()
    assert rows == [(user, "INC-42: the whole rack lost cooling", 7, 5, 20, "both", str(out.resolve()))]
    for script in ("drain.sh", "kubectl.sh"):
        head = (out / script).read_text().split("set -euo pipefail")[0]
        assert f"# FORCED past the drain cap by {user} at " in head
        assert "7 of 20 nodes to drain, limit 5; why: INC-42: the whole rack lost cooling" in head
    doc = json.loads((out / "blocklist.json").read_text())
    jsonschema.validate(doc, json.loads(exports.SCHEMA.read_text()))
    assert {k: doc["override"][k] for k in ("user", "why", "drains", "drain_limit", "fleet")} == {
        "user": user, "why": "INC-42: the whole rack lost cooling", "drains": 7, "drain_limit": 5, "fleet": 20}
    assert (doc["fleet"], doc["drain_limit"], doc["platform"]) == (20, 5, "both")
    # one number everywhere: node_actions.score 0.8649 is 0.86 in drain.sh's reasons and in blocklist.json
    assert {e["score"] for e in doc["entries"]} == {0.86}
    assert "goodput: drain_now xid score=0.86" in (out / "drain.sh").read_text()
    # the export's override does not carry over to the run: the cap is checked again, live
    live.scontrol(*[(f"gpu{i:02d}", "IDLE", None) for i in range(20)])
    assert live.run(out / "drain.sh").returncode == 4 and live.changes() == []
    # a warehouse with no override needs no --why, and records nothing
    ok = _warehouse(tmp_path / "ok.duckdb", 20, actions.head(3))
    assert runner.invoke(main, ["export", "--db", str(ok), "--out", str(tmp_path / "ok")]).exit_code == 0
    con = duckdb.connect(str(ok), read_only=True)
    assert not con.execute("SELECT count(*) FROM duckdb_tables() WHERE table_name = 'export_overrides'").fetchall()[0][0]
    con.close()
    assert json.loads((tmp_path / "ok" / "exports" / "blocklist.json").read_text())["override"] is None
    assert runner.invoke(main, ["export", "--db", str(ok), "--out", str(tmp_path / "ok"), "--why", "x"]).exit_code == 2


def test_node_conditions_are_in_node_problem_detectors_shape(tmp_path):
    actions = _actions(("gpu01", "drain_now", "xid", 0.93), ("gpu02", "drain_after_job", "risk", 0.6),
                       ("gpu03", "watch", "xid", 0.1))
    resume = pl.DataFrame({"host": ["gpu05"], "evidence": ["RMA closed; dcgm_diag_r3 passed"]})
    paths = _export(tmp_path / "ex", actions, platform="kubernetes", resume=resume, cluster="k8s1")
    doc = json.loads(paths["node_conditions.json"].read_text())
    assert doc["cluster"] == "k8s1" and doc["taint"] == scripts.K8S_TAINT_KEY
    got = {n["name"]: n["conditions"] for n in doc["nodes"]}
    assert set(got) == {"gpu01", "gpu02", "gpu03", "gpu05"}
    rfc3339 = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$")
    for conditions in got.values():
        (c,) = conditions  # Kubernetes NodeCondition: exactly these fields
        assert set(c) == {"type", "status", "reason", "message", "lastHeartbeatTime", "lastTransitionTime"}
        assert c["type"] == scripts.CONDITION_TYPE and c["status"] in ("True", "False")
        assert re.fullmatch(r"[A-Z][A-Za-z]*", c["reason"]) and c["message"]
        assert rfc3339.match(c["lastHeartbeatTime"]) and rfc3339.match(c["lastTransitionTime"])
    assert [(got[h][0]["status"], got[h][0]["reason"]) for h in ("gpu01", "gpu02", "gpu03", "gpu05")] == [
        ("True", "DrainNow"), ("True", "DrainAfterJob"), ("False", "Watch"), ("False", "RepairedAndValidated")]
    assert got["gpu01"][0]["message"].startswith("goodput: drain_now xid score=0.93: xid on gpu01")


def test_plan_lines_stay_plain_text():
    """The plan is a quoted here-document: nothing a log or the warehouse says can become shell."""
    hostile = pl.DataFrame({"host": ["gpu1", 'gpu2";rm -rf /;"', "GOODPUT_PLAN"],
                            "evidence": ["ok'$(reboot)`id`|x\nGOODPUT_PLAN", "x", "y"]})
    actions = _actions(("gpu3", "drain_now", "x'$(id)\"|;\nfoo", 0.5))
    steps = exports.plan_steps(actions, _slurm(("gpu1", "DOWN*+DRAIN'$(x)", "r")), hostile)
    assert [s.host for s in steps] == ["gpu3", "GOODPUT_PLAN", "gpu1"]
    for s in steps:
        assert re.fullmatch(r"[A-Za-z0-9._-]+\|[a-z_]+\|[a-z_]+\|[A-Za-z0-9_+*-]+\|[A-Za-z0-9 _.:=,/()+-]*", s.line())
    with pytest.raises(ValueError):
        scripts.Step("gpu1", "resume", "out", "-", "it's").line()
    text = exports.drain_script(actions, "header", resume=hostile, fleet=10)
    assert subprocess.run(["bash", "-n"], input=text, text=True).returncode == 0
    assert os.linesep == "\n" and "rm -rf" not in text and "$(reboot)" not in text
