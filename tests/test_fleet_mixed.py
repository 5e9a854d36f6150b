"""A mixed fleet (issue 36): `simulate --fleet` writes a Slurm cluster beside a Kubernetes one, `run --fleet` runs
both, and the fleet report compares them as it compares two Slurm clusters. The scheduler row comes from what
each warehouse holds; each column is filled and agrees with that cluster's own report; the Slurm cluster writes
exactly what it writes when its neighbour is a Slurm cluster too."""
import json
import math
import re

import pytest
from click.testing import CliRunner

from pipelines.cli import main
from tests.shared import quick_telemetry
from tests.test_fleet_report import TABLES, _cells, _own, _rows
from tests.test_simulate_fleet import digest

# 8 nodes, 4 days, seed 2: the Kubernetes cluster (seed 3) has a node fault that fails jobs; ~25 s in all
MIXED, ALL_SLURM = "sl:8:small,ku:8:small:kubernetes", "sl:8:small,ku:8:small"
SIM = ["--days", "4", "--seed", "2"]
SUMMARY = ("job_instances", "gpu_hours", "goodput_7d", "r_per_1000_node_days", "infra_failed_jobs",
           "infra_lost_gpu_hours")


def _same(a: str | None, b: str | None) -> bool:
    """Two cells' numbers from two warehouses built from the same files: a sum of floats may differ in its last
    bit with the order DuckDB adds the rows in (rate:gpu_unavailable 22.757185831650027 against ...03 once)."""
    try:
        return a == b or math.isclose(float(a), float(b), rel_tol=1e-12)
    except (TypeError, ValueError):
        return False


@pytest.fixture(scope="module")
def fleets(tmp_path_factory):
    root = tmp_path_factory.mktemp("mixed")
    runner = CliRunner()
    for name, spec in (("mixed", MIXED), ("slurm", ALL_SLURM)):
        simulated = runner.invoke(main, ["simulate", "--fleet", spec, *SIM, "--out", str(root / name / "src")])
        assert simulated.exit_code == 0, simulated.output
    with quick_telemetry():  # --jobs 1 runs the clusters in this process, where the patch holds
        mixed = root / "mixed"
        ran = runner.invoke(main, ["run", "--fleet", str(mixed / "src"), "--db-dir", str(mixed / "db"),
                                   "--out", str(mixed / "out"), "--jobs", "1", "-q"])
    # the all-Slurm fleet is only simulated: its sl tree is byte for byte the mixed fleet's (the first test), and the
    # fleet report reads each cluster's warehouse on its own, so sl's column is what sl's own run gives
    html = (root / "mixed" / "out" / "fleet" / "fleet-report.html").read_text()
    return {"root": root, "ran": ran, "html": html}


def test_the_mixed_fleet_is_simulated_and_the_slurm_cluster_writes_what_it_writes_beside_slurm(fleets):
    root = fleets["root"]
    mixed, slurm = (json.loads((root / f / "src" / "fleet.json").read_text()) for f in ("mixed", "slurm"))
    assert [c.get("scheduler") for c in mixed["clusters"]] == [None, "kubernetes"]
    assert mixed["clusters"][1] == {**slurm["clusters"][1], "scheduler": "kubernetes"}
    assert {**mixed, "clusters": mixed["clusters"][:1]} == {**slurm, "clusters": slurm["clusters"][:1]}
    assert digest(root / "mixed" / "src" / "sl") == digest(root / "slurm" / "src" / "sl")
    ku = {p.name for p in (root / "mixed" / "src" / "ku").iterdir()}
    assert {"kubernetes", "node_health"} <= ku and not {"slurm", "slurm_events"} & ku


def test_the_report_compares_a_slurm_and_a_kubernetes_cluster(fleets):
    ran, html = fleets["ran"], fleets["html"]
    assert ran.exit_code == 0 and "Fleet: ku ok, sl ok" in ran.output, ran.output
    cells = _cells(html)
    assert (cells[("sl", "scheduler")], cells[("ku", "scheduler")]) == ("slurm", "kubernetes")
    row = next(r for r in _rows(html, "summary") if 'data-key="scheduler"' in r)
    assert re.findall(r'data-cluster="(\w+)"[^>]*>([^<]*)<', row) == [("ku", "Kubernetes"), ("sl", "Slurm")]
    for table in TABLES:  # every comparison has both columns
        header, *rows = _rows(html, table)
        assert '<th class="n">ku</th>' in header and '<th class="n">sl</th>' in header, table
        assert rows and all(set(re.findall(r'data-cluster="(\w+)"', r)) == {"ku", "sl"} for r in rows), table
    assert {c for c, _ in re.findall(r'<tr data-cluster="(\w+)" data-host="([^"]+)">', html)} == {"ku", "sl"}


def test_the_kubernetes_column_is_its_own_report(fleets):
    root, cells = fleets["root"], _cells(fleets["html"])
    own = _own(root / "mixed" / "db", "ku")
    head = own["report"]["head"]
    for key in SUMMARY:
        assert cells[("ku", key)] is not None and float(cells[("ku", key)]) == head[key], key
    assert head["job_instances"] > 0 and head["infra_failed_jobs"] > 0
    # failures per cause: each cause's count (in brackets) is the cluster report's failures so far
    counts = {k.removeprefix("rate:"): re.search(r'data-cluster="ku" data-key="%s" data-value="[^"]*">[^<]*\((\d+)\)'
                                                  % re.escape(k), fleets["html"])[1]
              for (c, k) in cells if c == "ku" and k.startswith("rate:")}
    so_far = {r["cause"]: r["failures"] for r in own["report"]["failures_so_far"]}
    assert so_far and {k: int(v) for k, v in counts.items() if int(v)} == so_far
    # its cordons are node states (the kubelet's Node Events): counted as Slurm's drains are
    assert cells[("ku", "lemons")] is not None
    assert float(cells[("ku", "nodes_out_of_service")]) == head["nodes_out_of_service"]
    assert "no node states read" not in fleets["html"]


def test_the_slurm_column_is_its_own_report_too(fleets):
    root, cells = fleets["root"], _cells(fleets["html"])
    head = _own(root / "mixed" / "db", "sl")["report"]["head"]
    assert cells[("sl", "scheduler")] == "slurm"
    for key in SUMMARY:
        assert cells[("sl", key)] is not None and _same(cells[("sl", key)], str(head[key])), key
