"""The fleet report: every cluster in every comparison, its numbers each cluster's own report's, hosts named with
their cluster (the two clusters here share host names), drawn by a real browser."""
import os
import re
import subprocess
from pathlib import Path

import pytest

from analysis import sql, warehouse
from analysis.fleet.trend import Window, verdict
from analysis.package_files import demo_source
from analysis.simulate.config import preset
from analysis.simulate.run import simulate
from pipelines.runner import run_pipeline
from reports.headline import loss_split
from reports.fleet import DT_H, U0_H, render_fleet_report
from reports.render import fmt_num, gather, node_models
from tests.shared import quick_telemetry
from tests.test_report import _ChartDivs, _browser, embedded_specs

CLUSTERS = {"rsc1", "rsc2"}
CHARTS = {"rates", "mttf", "ettr", "capacity"}  # each chart's dataset has the chart's name
TABLES = ("summary", "trend", "rates-by-cause", "interruptions", "mttf", "ettr", "capacity-split", "second-order", "nodes")
EVIL = "<script>alert(1)</script>"
# 64 days: the last 30 days can be judged against the 30 before; no telemetry (the fleet report shows none); 12
# nodes (the run of 24 cost 7 CPU s more): their names still collide with the demo's, and every table has rows
SIM = dict(nodes=12, days=64, seed=3, telemetry_jobs=0)


def _four_digits(text: str) -> str:
    """gpu001 -> gpu0001, gpu[001-002,004] -> gpu[0001-0002,0004]: the simulator's host names."""
    return re.sub(r"gpu(\[[^\]]*\]|\d{3})(?!\d)",
                  lambda m: "gpu" + re.sub(r"(?<!\d)(\d{3})(?!\d)", r"0\1", m[1]), text)


def _demo_with_colliding_hosts(dest: Path) -> None:
    """The hand-made demo with the simulator's host names (file names and contents), so both clusters have a
    gpu0003; one node drained with a hostile reason (shown as its state in the costliest nodes)."""
    src = demo_source()
    for path in sorted(src.rglob("*")):
        target = dest / _four_digits(path.relative_to(src).as_posix())
        if path.is_dir():
            target.mkdir(parents=True, exist_ok=True)
            continue
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(_four_digits(path.read_text()))
    with next((dest / "slurm_events").glob("*.txt")).open("a") as f:
        f.write(f"gpu0003|2024-03-02T12:00:00|Unknown|DRAIN|{EVIL}|root(0)\n")


@pytest.fixture(scope="module")
def fleet(tmp_path_factory):
    root = tmp_path_factory.mktemp("fleet")
    _demo_with_colliding_hosts(root / "src" / "rsc1")
    simulate(preset("small", **SIM), root / "src" / "rsc2")
    reports = {}
    for name in sorted(CLUSTERS):
        with quick_telemetry():
            result = run_pipeline(root / "src" / name, root / "db" / f"{name}.duckdb", root / "out" / name)
        assert result.success, result.report()
        reports[name] = result.report_path
    path = render_fleet_report(root / "db", root / "fleet", reports)
    return {"path": path, "html": path.read_text(), "db": root / "db", "reports": reports}


def _cells(html: str) -> dict[tuple[str, str], str | None]:
    """(cluster, row key) -> the number behind a table cell (None: the cell says in words why it has none)."""
    found = re.findall(r'data-cluster="([^"]+)" data-key="([^"]+)"(?: data-value="([^"]*)")?', html)
    return {(c, k): v or None for c, k, v in found}


def _rows(html: str, table: str) -> list[str]:
    body = re.search(rf'<table id="{table}">(.*?)</table>', html, flags=re.S)
    assert body, f"no table {table}"
    return re.findall(r"<tr[^>]*>(.*?)</tr>", body[1], flags=re.S)


def _own(db: Path, cluster: str) -> dict:
    """What the cluster's own report shows, by its own functions at its own day."""
    con = warehouse.connect(db / f"{cluster}.duckdb", read_only=True)
    try:
        day = sql.scalar(con, "ops/last_data_day")
        hosts = {h for (h,) in con.execute("SELECT DISTINCT host FROM node_events").fetchall()}
        return {"day": day, "report": gather(con, day, U0_H, DT_H), "models": node_models(con), "hosts": hosts,
                "rolling": sql.query(con, "report/failure_rate", {"day": day})}
    finally:
        con.close()


@pytest.fixture(scope="module")
def own(fleet):
    return {c: _own(fleet["db"], c) for c in sorted(CLUSTERS)}


def test_every_cluster_in_every_chart_and_table(fleet):
    html = fleet["html"]
    specs = embedded_specs(html)
    assert set(specs) == CHARTS
    for name, spec in specs.items():
        assert {row["cluster"] for row in spec["datasets"][name]} == CLUSTERS, name
    for table in TABLES:
        header, *rows = _rows(html, table)
        assert all(f'<th class="n">{c}</th>' in header for c in CLUSTERS), table
        assert rows and all(set(re.findall(r'data-cluster="(\w+)"', r)) == CLUSTERS for r in rows), table
    top = re.findall(r'<tr data-cluster="(\w+)" data-host="([^"]+)">', html)
    assert {c for c, _ in top} == CLUSTERS


def test_numbers_are_each_clusters_own_report(fleet, own):
    cells = _cells(fleet["html"])
    for cluster, o in own.items():
        g, m, value = o["report"], o["models"], lambda key: cells[(cluster, key)]  # noqa: B023
        assert value("day") == o["day"].isoformat()
        for key in ("job_instances", "gpu_hours", "goodput_7d", "r_per_1000_node_days", "infra_failed_jobs",
                    "infra_lost_gpu_hours", "nodes_out_of_service"):
            assert float(value(key)) == g["head"][key], (cluster, key)
        measured = [r for r in g["mttf"] if r["mttf_hours"] is not None]
        assert measured and all(float(value(f"mttf:{r['bucket_gpus']}")) == r["mttf_hours"] for r in measured)
        assert float(value("runs")) == g["runs"] and float(value("runs_mean_ettr")) == g["runs_mean_ettr"]
        # the shares as the cluster's report prints them (percent to a tenth, adding up: reports/headline.py)
        assert {p["key"]: float(value(f"share:{p['key']}")) for p in g["capacity"]["parts"]} == \
            loss_split(g["capacity"])["parts"]
        assert {k: float(value(k)) for k in m["counts"]} == m["counts"] and float(value("left_alone")) == m["left_alone"]
        lemons = [lem for lem in m["lemons"] if lem["is_lemon"]]  # the report's table (all of them, so few)
        assert len(lemons) < len(m["lemons"]) and float(value("lemons")) == len(lemons)
        # per cause over the whole period: the failures the cluster report counts per cause
        drawn = [r for r in embedded_specs(fleet["html"])["rates"]["datasets"]["rates"] if r["cluster"] == cluster]
        assert {r["cause"]: r["failures"] for r in drawn if r["failures"]} == \
            {f["cause"]: f["failures"] for f in g["failures_so_far"]}


def test_numbers_match_the_clusters_html(fleet):
    """The cluster reports as written: Meta's r and the capacity split, as their pages carry them."""
    cells = _cells(fleet["html"])
    for cluster, report in fleet["reports"].items():
        page = report.read_text()
        r = float(re.search(r'id="r" data-r="([^"]+)"', page)[1])
        assert float(cells[(cluster, "r_per_1000_node_days")]) == pytest.approx(r, rel=1e-12)
        shares = re.findall(r'<td class="n" data-share="([^"]+)">', page)  # the capacity table, as printed
        keys = ("productive", "infrastructure", "second_order", "user_failures", "preemptions", "stragglers", "idle")
        assert [cells[(cluster, f"share:{k}")] for k in keys] == shares


def test_getting_worse_is_the_rolling_rate_of_each_cluster(fleet, own):
    """The last 30 days' rate is the cluster report's 30-day rolling rate on its day (all causes); a cluster
    with less than 60 days is not judged, in words."""
    html, cells = fleet["html"], _cells(fleet["html"])
    rolling = own["rsc2"]["rolling"]
    last = rolling.filter(rolling["day"].dt.date() == own["rsc2"]["day"])
    assert float(cells[("rsc2", "recent")]) == pytest.approx(last["rate"].sum(), rel=1e-9)
    assert cells[("rsc2", "verdict")] in ("worse", "better", "steady") and cells[("rsc2", "before")]
    assert cells[("rsc1", "recent")] is None and cells[("rsc1", "verdict")] is None
    assert re.search(r"<b>rsc1</b>: not judged yet: two full 30-day windows need 60 days", html)
    assert re.search(r"<b>rsc2</b> (is getting worse|is getting better|holds steady): [\d.]+ infrastructure failures "
                     r"per 1,000 node-days from \d{4}-\d\d-\d\d to \d{4}-\d\d-\d\d", html)


def test_hosts_are_named_with_their_cluster(fleet, own):
    """Both clusters have gpu0001..gpu0008: each costliest node is its own cluster's, with that cluster's figures."""
    assert len(own["rsc1"]["hosts"] & own["rsc2"]["hosts"]) >= 5
    rows = re.findall(r'<tr data-cluster="(\w+)" data-host="([^"]+)"><td>(\w+)</td><td>([^<]+)</td><td class="n">([^<]+)</td>',
                      fleet["html"])
    assert rows
    for cluster, host, shown_cluster, shown_host, lost in rows:
        assert (shown_cluster, shown_host) == (cluster, host)
        theirs = {n["host"]: n for n in own[cluster]["report"]["top_nodes"]}
        assert lost == fmt_num(theirs[host]["lost_gpu_hours"]), (cluster, host)


def test_escaped_self_contained_and_linked(fleet):
    html, here = fleet["html"], fleet["path"].parent
    assert EVIL not in html and "&lt;script&gt;alert(1)&lt;/script&gt;" in html
    assert re.findall(r"<(?:script|link)\b[^>]*(?:src|href)\s*=\s*[\"']?\s*(https?:)?//", html, flags=re.I) == []
    links = dict(re.findall(r'<a href="([^"]+)" data-cluster="(\w+)">', html))
    assert {c: (here / href).resolve() for href, c in links.items()} == {c: p.resolve() for c, p in fleet["reports"].items()}
    assert all(not os.path.isabs(href) for href in links)


def test_a_cluster_without_data_says_so(fleet, tmp_path):
    db = tmp_path / "db"
    db.mkdir()
    for name in CLUSTERS:
        (db / f"{name}.duckdb").symlink_to(fleet["db"] / f"{name}.duckdb")
    warehouse.connect(db / "rsc3.duckdb").close()  # a cluster whose first run has not ingested anything yet
    html = render_fleet_report(db, tmp_path / "out").read_text()
    assert "rsc3: no job has ended in its warehouse yet" in html and "its report</a>" not in html
    assert all({r["cluster"] for r in s["datasets"][n]} == CLUSTERS for n, s in embedded_specs(html).items())
    assert '<th class="n">rsc3</th>' not in html


def test_verdict_calls_only_what_chance_does_not_explain():
    assert verdict(Window(30, 1000), Window(10, 1000)) == "worse"
    assert verdict(Window(10, 1000), Window(30, 1000)) == "better"
    assert verdict(Window(12, 1000), Window(10, 1000)) == "steady"  # 20% more, well within chance
    assert verdict(Window(6, 500), Window(12, 1000)) == "steady"  # the same rate
    assert verdict(Window(0, 1000), Window(0, 1000)) == "steady" and Window(3, 0).rate is None


def test_fleet_report_renders_in_headless_chromium(fleet, tmp_path):
    """No console error, every chart frame drawn, every cluster's name drawn in every chart (legend or axis)."""
    flags = _browser(tmp_path)
    dom = subprocess.run([*flags, "--enable-logging=stderr", "--v=0", "--dump-dom", fleet["path"].as_uri()],
                         capture_output=True, text=True, timeout=180)
    errors = [line for line in dom.stderr.splitlines() if ":CONSOLE" in line and re.search(r"uncaught|error", line, re.I)]
    assert errors == [], errors
    parser = _ChartDivs()
    parser.feed(dom.stdout)
    assert parser.frames == parser.drawn == CHARTS, f"frames not drawn: {parser.frames - parser.drawn}"
    for name in CHARTS:
        start = dom.stdout.index(f'id="c-{name}"')
        svg = dom.stdout[start:dom.stdout.index("</svg>", start)]
        assert all(re.search(rf">{c}</text>", svg) for c in CLUSTERS), name
    shot = tmp_path / "fleet.png"
    subprocess.run([*flags, "--window-size=1100,5000", f"--screenshot={shot}", fleet["path"].as_uri()],
                   capture_output=True, timeout=180)
    assert shot.exists() and shot.stat().st_size > 50_000


def test_interruptions_side_by_side(fleet, own):
    """Llama 3's interruption table per cluster: each cause's count is the cluster report's (test_report.py computes
    that one independently), never more than the cluster's node incidents up to its day (planned work: its planned
    outages), its rate per 1,000 of its node-days; a cause a cluster never had is 0 there."""
    html, cells = fleet["html"], _cells(fleet["html"])
    rates = dict(((c, k), float(v)) for c, k, v in re.findall(r'data-cluster="(\w+)" data-key="([^"]+)"[^>]*data-rate="([^"]+)"', html))
    causes = set()
    for cluster in CLUSTERS:
        con = warehouse.connect(fleet["db"] / f"{cluster}.duckdb", read_only=True)
        try:
            end = {"day": own[cluster]["day"]}
            incidents = dict(con.execute("""
                SELECT i.cause, count(*) FROM node_incidents i JOIN taxonomy_causes t USING (cause)
                WHERE t.domain <> 'user' AND NOT t.planned AND i.first_event < $day::TIMESTAMP + INTERVAL 1 DAY
                GROUP BY i.cause""", end).fetchall())
            planned = dict(con.execute("SELECT cause, count(*) FROM node_outages WHERE planned "
                                       "AND time_start < $day::TIMESTAMP + INTERVAL 1 DAY GROUP BY cause", end).fetchall())
            node_days = con.execute("SELECT sum(hours_observed) / 24 FROM node_availability").fetchone()[0]
        finally:
            con.close()
        it = own[cluster]["report"]["interruptions"]  # the cluster's own report
        counts = {r["cause"]: r["interruptions"] for r in it["rows"] + it["planned"]}
        assert counts, cluster
        assert all(n <= incidents[c] for c, n in counts.items() if c not in planned)
        assert {c: n for c, n in counts.items() if c in planned} == planned
        causes |= set(counts)
        for cause, n in counts.items():
            assert float(cells[(cluster, f"interruptions:{cause}")]) == n, (cluster, cause)
            assert rates[(cluster, f"interruptions:{cause}")] == pytest.approx(1000 * n / node_days, rel=1e-9)
    keys = re.findall(r'<tr data-key="interruptions:(\w+)"', html)
    assert set(keys) == causes and len(keys) == len(causes)
    only_one = [c for c in causes if any(cells[(k, f"interruptions:{c}")] == "0" for k in CLUSTERS)]
    assert only_one  # the hand-made cluster has a few causes, the simulated one more
