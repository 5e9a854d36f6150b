"""`goodput simulate --fleet`: one tree per cluster, colliding host names, each cluster's own profile, seed and
truth, sacct dumps that name their cluster; the same command writes the same files."""
import hashlib
import json

import polars as pl
import pytest
from click.testing import CliRunner

from analysis.ingest.parsers import sacct
from analysis.sources import BUILT_IN

# folders only a Kubernetes cluster has (issue 36): the Slurm simulator writes none of them
KUBERNETES_ONLY = {"node_health", "kubernetes"}
from analysis.simulate.config import preset
from analysis.simulate.fleet import manifest, parse_fleet, plan
from analysis.simulate.run import simulate
from pipelines.cli import main
from tests.conftest import parse_file

# "lab" is no preset: the first position's profile (rsc1); "rsc2" is a preset: its own profile
FLEET = ["simulate", "--fleet", "lab:10,rsc2:8", "--days", "3", "--seed", "4"]


def digest(root):
    """Every file's hash; summary.json without its wall time (the one value that differs run to run)."""
    out = {}
    for p in sorted(root.rglob("*")):
        if p.is_file():
            data = p.read_bytes()
            if p.name == "summary.json":
                data = json.dumps({k: v for k, v in json.loads(data).items() if k != "wall_s"}).encode()
            out[str(p.relative_to(root))] = hashlib.sha256(data).hexdigest()
    return out


@pytest.fixture(scope="module")
def fleet(tmp_path_factory):
    root = tmp_path_factory.mktemp("fleet")
    result = CliRunner().invoke(main, [*FLEET, "--out", str(root / "a")])
    assert result.exit_code == 0, result.output
    return root, result


def test_one_tree_per_cluster_and_the_manifest(fleet):
    root, result = fleet
    out = root / "a"
    assert sorted(p.name for p in out.iterdir()) == ["fleet.json", "lab", "rsc2"]
    for name in ("lab", "rsc2"):
        assert {s.folder for s in BUILT_IN if s.folder not in KUBERNETES_ONLY} | {"truth"} <= {
            p.name for p in (out / name).iterdir()}, name
        assert f"cluster {name} (" in result.stderr  # a progress line per cluster
    assert json.loads((out / "fleet.json").read_text()) == {
        "start": "2024-03-01", "days": 3,
        "clusters": [
            {"name": "lab", "nodes": 10, "profile": "rsc1", "profile_from": "position", "seed": 4,
             "failure_rate": 6.0, "lemon_share": 0.015},
            {"name": "rsc2", "nodes": 8, "profile": "rsc2", "profile_from": "name", "seed": 5,
             "failure_rate": 2.34, "lemon_share": 0.015}]}


def test_host_names_collide_and_truth_is_per_cluster(fleet):
    out = fleet[0] / "a"
    hosts = {n: set(pl.read_csv(out / n / "topology" / "cabling.csv")["host"]) for n in ("lab", "rsc2")}
    assert hosts["rsc2"] == {f"gpu{i:04d}" for i in range(1, 9)} and hosts["rsc2"] < hosts["lab"]
    for truth in ("job_instances.csv", "nodes.csv"):
        assert (out / "lab" / "truth" / truth).read_bytes() != (out / "rsc2" / "truth" / truth).read_bytes()
    config = {n: json.loads((out / n / "truth" / "summary.json").read_text())["config"] for n in ("lab", "rsc2")}
    assert (config["lab"]["cluster"], config["lab"]["failure_rate"], config["lab"]["nodes"]) == ("lab", "6.0", "10")
    assert (config["rsc2"]["cluster"], config["rsc2"]["failure_rate"]) == ("rsc2", "2.34")


def test_each_tree_s_sacct_dumps_name_its_own_cluster(fleet):
    out = fleet[0] / "a"
    for name in ("lab", "rsc2"):
        broken = {r["line_no"] for r in pl.read_csv(out / name / "truth" / "malformed_lines.csv").iter_rows(named=True)
                  if r["file"].startswith("slurm/")}
        files = sorted((out / name / "slurm").glob("sacct-*.txt"))
        assert len(files) == 3
        for path in files:
            result, counts = parse_file(sacct.parse, path, "slurm")
            assert path.read_text().startswith("Cluster|JobID|")
            assert result.tables["sacct_records"]["cluster"].unique().to_list() == [name], path
            assert counts.rejects == (len(broken) if path == files[0] else 0)


def test_a_fleet_cluster_writes_what_a_single_run_writes_but_the_cluster_column(fleet, tmp_path):
    """The Cluster column is the only difference: the first cluster (seed 4, rsc1 profile) against `simulate`
    of the rsc1 preset with that seed."""
    simulate(preset("rsc1", nodes=10, days=3, seed=4), tmp_path / "single")
    fleet_files, single_files = digest(fleet[0] / "a" / "lab"), digest(tmp_path / "single")
    assert fleet_files.keys() == single_files.keys()
    differ = {k for k in fleet_files if fleet_files[k] != single_files[k]}
    assert differ == {k for k in fleet_files if k.startswith("slurm/sacct-")} | {"truth/summary.json"}
    for rel in sorted(differ - {"truth/summary.json"}):
        lines = (fleet[0] / "a" / "lab" / rel).read_text().splitlines()
        prefixed = [line.removeprefix("Cluster|").removeprefix("lab|") for line in lines]
        assert prefixed == (tmp_path / "single" / rel).read_text().splitlines()


def test_the_same_command_writes_the_same_files(fleet):
    root = fleet[0]
    result = CliRunner().invoke(main, [*FLEET, "--out", str(root / "b")])
    assert result.exit_code == 0, result.output
    assert digest(root / "a") == digest(root / "b")


@pytest.mark.parametrize("spec, message", [
    ("Rsc1:10", "must match"), ("1abc:10", "must match"), ("a" * 33 + ":10", "must match"),
    ("a b:10", "must match"), ("x;drop:10", "must match"), ("x:10,x:12", "given twice"),
    ("x", "is not NAME:NODES"), ("x:10,", "is not NAME:NODES"), ("x:ten", "is not NAME:NODES"),
    ("x:2", "expected 4 to 100,000"), ("x:10:kubernetes:small", "one profile, then one scheduler"),
    ("x:10:small:rsc1", "one profile, then one scheduler"), ("x:10:slurm:kubernetes", "one profile, then one"),
    ("x:10:k8s", "'k8s' is no profile (rsc1, rsc2, small) nor scheduler (slurm, kubernetes)"),
    ("x:10:small:kubernetes:slurm", "is not NAME:NODES[:PROFILE][:SCHEDULER]"),
])
def test_a_bad_fleet_is_a_usage_error(tmp_path, spec, message):
    result = CliRunner().invoke(main, ["simulate", "--fleet", spec, "--out", str(tmp_path / "out")])
    assert result.exit_code == 2 and "Invalid value for '--fleet'" in result.output and message in result.output
    assert not (tmp_path / "out").exists()


def test_each_cluster_names_its_scheduler_or_takes_the_option_s():
    members = parse_fleet("a:8,b:8:kubernetes,c:8:small:slurm,rsc2:8:kubernetes")
    assert members[1:] == [("b", 8, None, "kubernetes"), ("c", 8, "small", "slurm"), ("rsc2", 8, None, "kubernetes")]
    assert [(m.profile, m.scheduler) for m in plan(members)] == [
        ("rsc1", "slurm"), ("rsc2", "kubernetes"), ("small", "slurm"), ("rsc2", "kubernetes")]
    assert [m.scheduler for m in plan(members, scheduler="kubernetes")] == [
        "kubernetes", "kubernetes", "slurm", "kubernetes"]
    assert [c.get("scheduler") for c in manifest(plan(members))["clusters"]] == [None, "kubernetes", None, "kubernetes"]


@pytest.mark.parametrize("other", [["--preset", "rsc1"], ["--nodes", "16"]])
def test_fleet_excludes_preset_and_nodes(tmp_path, other):
    result = CliRunner().invoke(main, ["simulate", "--fleet", "a:8", *other, "--out", str(tmp_path / "out")])
    assert result.exit_code == 2 and "mutually exclusive" in result.output
    assert not (tmp_path / "out").exists()


def test_a_fleet_goes_into_a_new_directory(fleet):
    result = CliRunner().invoke(main, [*FLEET, "--out", str(fleet[0] / "a")])
    assert result.exit_code == 1 and "is not empty" in result.output
