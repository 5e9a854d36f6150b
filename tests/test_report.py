"""The reliability report: offline, escaped, and drawn by a real browser."""
import html as html_lib
import json
import re
import shutil
import subprocess
from collections import defaultdict
from datetime import date, datetime, timedelta
from html.parser import HTMLParser
from pathlib import Path

import duckdb
import polars as pl
import pytest

from click.testing import CliRunner

from analysis.package_files import demo_source
from analysis.simulate.config import preset
from analysis.simulate.run import simulate
from assets.resources import ModelSettings
from pipelines.cli import main
from pipelines.runner import run_pipeline
from reports import charts
from reports.render import render_report
from tests.report_splits import assert_splits_add_up, splits
from tests.shared import quick_telemetry

CHARTS = ("capacity", "goodput", "status", "failure_rate", "mttf", "ettr", "sweep", "loss", "cooccurrence", "risk")
DEMO_CHARTS = set(CHARTS) - {"failure_rate"}  # 14 days: the 30-day rolling rate is said in words, not drawn
EVIL = "<script>alert(1)</script>"
LOOP, LOOP_STATES = "4343434", ("FAILED", "FAILED", "REQUEUED", "FAILED", "FAILED", "REQUEUED", "FAILED", "COMPLETED")


def _add_crash_loop(src: Path) -> None:
    """A job restarted after five failures and two requeues for planned maintenance (its node drained
    "maintenance: ..." as Slurm requeued it): a crash loop of 5 failures, not 7 (as `goodput why` says)."""
    t = lambda v: v.strftime("%Y-%m-%dT%H:%M:%S")  # noqa: E731
    submit, rows, drains = datetime(2024, 3, 2, 0, 30), [], []
    for k, state in enumerate(LOOP_STATES):
        start = submit + timedelta(hours=2 * k, minutes=10)
        end = start + timedelta(hours=1)
        rows.append([LOOP, LOOP, "loop-train", "mallory", "llm", "learn", "high", "99999", state,
                     "1:0" if state == "FAILED" else "0:0", "None", t(submit), t(start - timedelta(minutes=5)), t(start),
                     t(end), "01:00:00", "2", "billing=192,cpu=192,gres/gpu=16,node=2", "gpu[0049-0050]", str(k),
                     "sbatch --requeue loop.sh"])
        if state == "REQUEUED":
            drains.append(f"gpu0049|{t(end)}|{t(end + timedelta(minutes=40))}|DRAIN|maintenance: firmware update|admin(1001)")
    with (src / "slurm" / "sacct-2024-03-02.txt").open("a") as f:
        f.writelines("|".join(r) + "\n" for r in rows)
    with next((src / "slurm_events").glob("*.txt")).open("a") as f:
        f.writelines(d + "\n" for d in drains)


@pytest.fixture(scope="module")
def report(tmp_path_factory):
    root = tmp_path_factory.mktemp("report")
    src = root / "src"
    simulate(preset("small"), src)
    # a large job with a hostile name, ended by a failure on the last day: it tops "costliest failures"
    last = sorted((src / "slurm").glob("sacct-*.txt"))[-1]
    day = last.stem.removeprefix("sacct-")
    row = ["4242424", "4242424", EVIL, "mallory", "llm", "learn", "high", "99999", "FAILED", "1:0", "None",
           f"{day}T00:00:00", f"{day}T00:00:00", f"{day}T00:10:00", f"{day}T20:10:00", "20:00:00", "128",
           "billing=12288,cpu=12288,gres/gpu=1024,node=128", "gpu[0001-0128]", "0", f"sbatch --job-name='{EVIL}' x.sh"]
    with last.open("a") as f:
        f.write("|".join(row) + "\n")
    _add_crash_loop(src)
    # the small preset fails ~7x as often as a real fleet: as in `goodput demo`, more of it may be drained
    with quick_telemetry():  # the drifting machines' section needs alerts, not well-trained detectors
        result = run_pipeline(src, root / "w.duckdb", root / "out", models=ModelSettings(max_drain_share=0.25))
    assert result.success, result.report()
    assert result.report_path and result.report_path.exists()
    return result.report_path


@pytest.fixture(scope="module")
def sample_report(demo_warehouse):
    """The hand-made sample through the whole pipeline, as `goodput demo --sample` runs it: conftest's
    demo_warehouse (`goodput run` on it, which exits 0 only when the run succeeded), read only."""
    reports = demo_warehouse.parent / "out" / "reports"
    (path,) = reports.glob("reliability-*.html")  # the sample's one day: the report the run wrote
    assert (reports / "latest.html").read_text() == path.read_text()
    return path


def test_report_is_self_contained(report):
    html = report.read_text()
    assert (report.parent / "latest.html").read_text() == html
    refs = re.findall(r"<(?:script|link)\b[^>]*(?:src|href)\s*=\s*[\"']?\s*(https?:)?//", html, flags=re.I)
    assert refs == []
    assert "vegaEmbed" in html and all(f'id="c-{c}"' in html for c in DEMO_CHARTS) and 'id="c-failure_rate"' not in html


def test_log_text_is_escaped(report):
    html = report.read_text()
    assert EVIL not in html
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html  # shown as text in the failures table


class _ChartDivs(HTMLParser):
    """The chart containers (frames), and which of them hold an <svg> or <canvas> after rendering."""

    def __init__(self):
        super().__init__()
        self.stack, self.drawn, self.frames = [], set(), set()

    def handle_starttag(self, tag, attrs):
        ident = dict(attrs).get("id") or ""
        self.stack.append(ident[2:] if ident.startswith("c-") else None)
        if "chart" in (dict(attrs).get("class") or "").split():
            self.frames.add(ident[2:])
        if tag in ("svg", "canvas"):
            self.drawn.update(c for c in self.stack if c)

    def handle_endtag(self, tag):
        if self.stack:
            self.stack.pop()


def _chromium() -> str | None:
    return shutil.which("chromium") or shutil.which("chromium-browser")


def _browser(tmp_path: Path) -> list[str]:
    browser = _chromium()
    if browser is None:
        pytest.skip("chromium is not installed and could not be installed (make test tries `apt-get install chromium`)")
    return [browser, "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
            "--disable-component-update", "--disable-sync", "--no-first-run", "--disable-dev-shm-usage",
            f"--user-data-dir={tmp_path / 'profile'}", "--virtual-time-budget=20000"]


def _drawn_without_empty_frames(flags: list[str], report: Path) -> subprocess.CompletedProcess:
    """The page as headless Chromium leaves it: no console error, every chart frame drawn, every chart
    with something to draw (a section with too little data says so in words), every date axis in the
    report's one format."""
    dom = subprocess.run([*flags, "--enable-logging=stderr", "--v=0", "--dump-dom", report.as_uri()],
                         capture_output=True, text=True, timeout=180)
    console = [line for line in dom.stderr.splitlines() if ":CONSOLE" in line]
    errors = [line for line in console if re.search(r"uncaught|error", line, flags=re.I)]
    assert errors == [], errors
    parser = _ChartDivs()
    parser.feed(dom.stdout)
    specs = embedded_specs(report.read_text())
    assert parser.frames == parser.drawn == set(specs), f"frames not drawn: {parser.frames - parser.drawn}"
    for name, spec in specs.items():
        assert _marks(name, spec), f"{name}: an empty frame"
        for axis in _temporal_axes(spec):
            assert axis.get("axis", {}).get("format") == charts.DATE_FORMAT, (name, axis)
    _too_little_data_in_words(report.read_text())
    return dom


def _too_little_data_in_words(html: str) -> None:
    """No figure where there is too little to measure: a model judged on a handful of held-out samples, a
    margin with nothing flagged or a negative one, a card about runs that do not exist."""
    from reports.render import MIN_HELD_OUT
    for row in _table(html, "model-evaluation"):
        cells = re.findall(r"<td[^>]*>([^<]*)</td>", row)
        assert (int(cells[2].replace(",", "")) < MIN_HELD_OUT) == ("too few held-out samples" in row), row
    for row in _table(html, "criteria-benchmarks"):
        margins = re.findall(r'<td class="n">(?:<span[^>]*>)?([^<]*)', row)[2:5]
        assert all(m in ("none flagged", "no boundary", "overlap") or float(m) >= 0 for m in margins), margins
    assert "n/a+" not in html and "(0 runs" not in html


MAIN_DATA = {"capacity": "capacity", "goodput": "goodput", "status": "status", "failure_rate": "rates", "mttf": None,
             "ettr": "expected", "sweep": "sweep", "loss": "loss", "cooccurrence": "cooccurrence", "risk": "risk"}


def _marks(name: str, spec: dict) -> bool:
    """Whether the chart's data hold something to draw (the MTTF chart: a measured point or a projection)."""
    names = [MAIN_DATA[name]] if MAIN_DATA[name] else list(spec["datasets"])
    rows = [v for n in names for v in spec["datasets"][n]]
    plotted = [v for v in rows if any(x is not None for k, x in v.items() if isinstance(x, (int, float)))]
    return bool(plotted) and (name != "failure_rate" or any(v["rate"] is not None for v in rows))


def _temporal_axes(spec) -> list[dict]:
    """Every x/y encoding of a date field anywhere in a spec (layers, panels)."""
    if isinstance(spec, dict):
        found = [v for k, v in spec.items() if k in ("x", "y") and isinstance(v, dict) and v.get("type") == "temporal"]
        return found + [a for v in spec.values() for a in _temporal_axes(v)]
    if isinstance(spec, list):
        return [a for v in spec for a in _temporal_axes(v)]
    return []


def test_report_renders_in_headless_chromium(report, tmp_path):
    flags = _browser(tmp_path)
    dom = _drawn_without_empty_frames(flags, report)
    assert set(embedded_specs(report.read_text())) == DEMO_CHARTS
    # the capacity split, as the browser shows it, adds up to 100% as printed
    assert_splits_add_up(dom.stdout, {"capacity", "win_back"})
    _capacity_adds_up(report.read_text())
    # what the browser drew: the simulated part of the expected-ETTR curve dashed, the co-occurrence counts
    # written in their cells, the MTTF projection labelled, causes in words in the legend
    ettr_svg = dom.stdout[dom.stdout.index('id="c-ettr"'):dom.stdout.index('id="c-sweep"')]
    methods = {p["method"] for p in embedded_specs(report.read_text())["ettr"]["datasets"]["expected"]}
    assert ("5,3" in set(re.findall(r'stroke-dasharray="([^"]+)"', ettr_svg))) == ("Monte Carlo" in methods)
    co_svg = dom.stdout[dom.stdout.index('id="c-cooccurrence"'):]
    assert re.search(r"<text[^>]*>\d+</text>", co_svg)
    assert "projection: 1/N at the fleet" in dom.stdout
    shot = tmp_path / "report-screenshot.png"  # tests write nothing into the checkout (conftest.py)
    subprocess.run([*flags, "--window-size=1100,7000", f"--screenshot={shot}", report.as_uri()],
                   capture_output=True, timeout=180)
    assert shot.exists() and shot.stat().st_size > 50_000


def test_sample_report_renders_in_headless_chromium(sample_report, tmp_path):
    """The hand-made sample (`goodput demo --sample`): one day of jobs, so the rolling rate and the model
    evaluation say in words why they show nothing, and the criteria margins are words where no node is
    flagged; no chart is an empty frame."""
    _drawn_without_empty_frames(_browser(tmp_path), sample_report)
    html = sample_report.read_text()
    assert "failure_rate" not in embedded_specs(html) and "Not drawn yet: the 30-day rolling rate" in html
    assert "none yet</div>" in html and "n/a+" not in html  # no run long enough for the largest-runs card
    assert "No model could be judged yet" in html
    # its validation runs carry their time (goodput.yaml benchmark_run_times), so they are judged: margins in words
    assert "No benchmark could be judged yet" not in html and "none flagged" in html and ">n/a<" not in html
    assert "failed the latest validation run" in html


LAYOUT_PROBE = """<script>
setTimeout(() => {
  const d = document.documentElement;
  const wide = [...document.querySelectorAll("body *")].filter(e => !e.closest("svg")
    && e.getBoundingClientRect().right > d.clientWidth + 1).map(e => e.tagName + "#" + (e.id || e.className));
  document.body.setAttribute("data-overflow", d.scrollWidth > d.clientWidth ? wide.join(" ") || "page" : "none");
  // a date cell on two lines ("2024-/03-28"), and chart labels drawn over one another
  const lines = e => { const r = document.createRange(); r.selectNodeContents(e);
    return new Set([...r.getClientRects()].map(x => Math.round(x.top))).size; };
  const wrapped = [...document.querySelectorAll("td.date")].filter(e => lines(e) > 1).map(e => e.textContent);
  document.body.setAttribute("data-wrapped", wrapped.length ? wrapped.slice(0, 3).join(" | ") : "none");
  const clash = [];
  for (const svg of document.querySelectorAll(".chart svg")) {
    // what is drawn: Vega keeps the axis labels it drops for overlapping, at opacity 0
    const shown = t => { for (let e = t; e && e !== svg; e = e.parentElement)
      if (getComputedStyle(e).opacity === "0" || e.getAttribute("opacity") === "0") return false; return true; };
    const boxes = [...svg.querySelectorAll("text")].filter(t => t.textContent.trim() && t.getClientRects().length && shown(t))
      .map(t => [t.textContent, t.getBoundingClientRect()]);
    for (let i = 0; i < boxes.length; i++) for (let j = i + 1; j < boxes.length; j++) {
      const [a, ra] = boxes[i], [b, rb] = boxes[j];
      const dx = Math.min(ra.right, rb.right) - Math.max(ra.left, rb.left);
      const dy = Math.min(ra.bottom, rb.bottom) - Math.max(ra.top, rb.top);
      if (dx > 2 && dy > 2) clash.push(svg.closest(".chart").id + ": " + a + " / " + b);
    }
  }
  document.body.setAttribute("data-clash", clash.length ? clash.slice(0, 4).join(" | ") : "none");
}, 8000);
</script>"""


def test_report_holds_at_768_px_and_prints(report, tmp_path):
    """On a 768 px screen nothing sticks out sideways (charts scale down), and the page prints."""
    browser = _chromium()
    if browser is None:
        pytest.skip("chromium is not installed and could not be installed (make test tries `apt-get install chromium`)")
    flags = [browser, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-dev-shm-usage",
             f"--user-data-dir={tmp_path / 'profile'}", "--virtual-time-budget=20000"]
    html = report.read_text()
    end = html.rindex("</body>")  # the last one: the inlined JavaScript may spell the tag in a string
    probe = tmp_path / "probe.html"
    probe.write_text(html[:end] + LAYOUT_PROBE + html[end:])
    for width in (768, 1400):  # a laptop and a desktop screen: no overflow, no wrapped date, no label on a label
        dom = subprocess.run([*flags, f"--window-size={width},1000", "--dump-dom", probe.as_uri()],
                             capture_output=True, text=True, timeout=180).stdout
        for probe_attr in ("overflow", "wrapped", "clash"):
            assert re.search(rf'<body[^>]* data-{probe_attr}="none"', dom), (width, re.search(rf'data-{probe_attr}="[^"]*"', dom))
    pdf = tmp_path / "report.pdf"
    subprocess.run([*flags, "--no-pdf-header-footer", f"--print-to-pdf={pdf}", report.as_uri()],
                   capture_output=True, timeout=180)
    data = pdf.read_bytes()
    assert data.startswith(b"%PDF") and len(re.findall(rb"/Type\s*/Page\b", data)) >= 5


SPEC_LINE = re.compile(r'^\s*"(\w+)": (\{.*\}),$', flags=re.M)


def embedded_specs(html: str) -> dict[str, dict]:
    """The Vega-Lite specs the page hands to vegaEmbed, parsed back."""
    return {name: json.loads(spec) for name, spec in SPEC_LINE.findall(html)}


def test_run_cells_bin_runs_by_size_and_ettr_band(tmp_path):
    from analysis import warehouse
    con = warehouse.connect(tmp_path / "w.duckdb")  # the report's one size bucket: up to a multiple of 8
    gpus = [8, 15, 16, 1024, 1025, 2047, 64, 1]
    size = [r[0] for r in con.execute("SELECT size_bucket(g) FROM unnest($g) t(g)", {"g": gpus}).fetchall()]
    con.close()
    assert size == [8, 16, 16, 1024, 1032, 2048, 64, 8]
    runs = pl.DataFrame({"n_gpus": gpus, "size": size, "ettr": [1.0, 0.99, 0.0, 0.5, 0.51, 0.52, None, 0.98],
                         "scheduled_hours": [6.0, 8.0, 10.0, 20.0, 40.0, 60.0, 7.0, 9.0],
                         "failures": [0, 1, 2, 0, 1, 1, 0, 3]})
    cells, medians = charts.run_cells(runs)
    by = {(r["size"], r["band"]): r for r in cells.iter_rows(named=True)}
    assert set(by) == {(8, "0.975–1.0"), (16, "0.975–1.0"), (16, "0.0–0.025"), (1024, "0.5–0.525"),
                       (1032, "0.5–0.525"), (2048, "0.5–0.525")}  # ETTR 1 in the top band
    assert (by[8, "0.975–1.0"]["runs"], by[8, "0.975–1.0"]["failures"], by[8, "0.975–1.0"]["gpus"]) == (2, 3, "1–8")
    assert (by[16, "0.0–0.025"]["runs"], by[16, "0.0–0.025"]["median_hours"], by[16, "0.0–0.025"]["gpus"]) == (1, 10.0, "9–16")
    assert medians.select("size", "runs", "median_ettr").rows() == [
        (8, 2, 0.99), (16, 2, 0.495), (1024, 1, 0.5), (1032, 1, 0.51), (2048, 1, 0.52)]


@pytest.fixture(scope="module")
def long_history(report, tmp_path_factory):
    """The report's warehouse grown to what years of a large cluster hold: 40,000
    more runs and three years of daily goodput and failure rates."""
    root = tmp_path_factory.mktemp("long")
    db = root / "w.duckdb"
    shutil.copyfile(report.parents[2] / "w.duckdb", db)
    day = date.fromisoformat(report.stem.removeprefix("reliability-"))
    con = duckdb.connect(str(db))
    con.execute("""
        INSERT INTO job_run_ettr BY NAME
        SELECT 'synthetic-' || i AS run_id, 8 * (2 ** (i % 9))::INTEGER AS n_gpus, ((i * 7919) % 1000) / 1000.0 AS ettr,
               (6 + i % 90) * 3600.0 AS scheduled_s, (6 + i % 90) * 3000.0 AS productive_s, 600.0 AS queue_s,
               1 + i % 3 AS instances, i % 4 AS failures, 0 AS preemptions,
               $day::TIMESTAMP - INTERVAL 2 DAY - to_hours(i % 20000) AS last_end
        FROM range(40000) t(i)""", {"day": day})
    first = con.execute("SELECT min(day) FROM goodput_daily").fetchone()[0]
    con.execute("""
        INSERT INTO goodput_daily BY NAME
        SELECT $first - to_days(k::INTEGER) AS day, 0.5 + (k % 40) / 100.0 AS goodput FROM range(1, 1100) t(k)""",
                {"first": first})
    con.execute("""
        INSERT INTO failure_rate_over_time BY NAME
        SELECT $first - to_days(k::INTEGER) AS day, c AS cause, (k % 17) / 10.0 AS rolling_30d_per_1000_node_days
        FROM range(1, 1100) t(k), (VALUES ('gpu_memory'), ('nvlink'), ('pcie')) v(c)""", {"first": first})
    return con, day, render_report(con, day, root / "out")


def test_a_long_history_keeps_the_page_small(long_history):
    con, day, path = long_history
    html = path.read_text()
    assert path.stat().st_size < 3_000_000  # 40,000 runs inlined one by one took 9 MB
    specs = embedded_specs(html)
    assert set(specs) == set(CHARTS)
    assert sum(len(json.dumps(s)) for s in specs.values()) < 250_000
    for name, spec in specs.items():  # data attached once, by name, never inline per layer
        used = {layer.get("data", spec.get("data"))["name"] for layer in spec.get("layer", [spec])}  # layers may share the top's
        assert "values" not in json.dumps({k: v for k, v in spec.items() if k != "datasets"}), name
        assert used == set(spec["datasets"]), name


def test_rolling_rates_are_drawn_once_the_window_has_filled(long_history):
    con, day, path = long_history
    html = path.read_text()
    rates = embedded_specs(html)["failure_rate"]["datasets"]["rates"]
    drawn = sorted(v["day"] for v in rates if v["rate"] is not None)
    assert drawn and drawn[0] > min(v["day"] for v in rates) and "not drawn yet" not in html


def test_the_ettr_chart_carries_every_run_binned(long_history):
    con, day, path = long_history
    spec = embedded_specs(path.read_text())["ettr"]
    cells, medians = spec["datasets"]["runs"], spec["datasets"]["medians"]
    plotted = con.execute("SELECT count(*), count(*) FILTER (WHERE run_id LIKE 'synthetic-%') FROM job_run_ettr "
                          "WHERE n_gpus >= 8 AND scheduled_s >= 6 * 3600 AND ettr IS NOT NULL "
                          "AND last_end < $day::TIMESTAMP + INTERVAL 1 DAY", {"day": day}).fetchone()
    assert plotted[1] == 40000
    assert sum(c["runs"] for c in cells) == sum(m["runs"] for m in medians) == plotted[0]
    assert len(cells) <= 15 * 40 and {m["size"] for m in medians} >= {8 * 2 ** k for k in range(9)}
    # the expected-ETTR curve is still drawn, from 8 GPUs to 16x the largest run size
    largest = max(m["size"] for m in medians)
    assert sorted({p["n_gpus"] for p in spec["datasets"]["expected"]}) == [8 * 2 ** k for k in range(20)
                                                                           if 8 * 2 ** k <= 16 * largest]
    assert f"{plotted[0]:,} job runs" in path.read_text()


def test_daily_series_become_weekly_means_over_years(long_history):
    con, day, path = long_history
    specs = embedded_specs(path.read_text())
    points = specs["goodput"]["datasets"]["goodput"]
    assert 150 < len(points) <= charts.MAX_POINTS
    weekly = dict(con.execute("SELECT strftime(date_trunc('week', day), '%Y-%m-%d'), avg(goodput) FROM goodput_daily "
                              "WHERE day <= $day GROUP BY 1", {"day": day}).fetchall())
    assert all(p["goodput"] == pytest.approx(weekly[p["day"]], rel=1e-3) for p in points)
    rates = specs["failure_rate"]["datasets"]["rates"]
    assert len({r["day"] for r in rates}) <= charts.MAX_POINTS and {"gpu_memory", "nvlink", "pcie"} <= {r["cause"] for r in rates}


def test_report_shows_validation_criteria_and_drifting_machines(report):
    html = report.read_text()
    crit = html[html.index("Validation runs and benchmark criteria"):html.index("Machines that drifted")]
    assert "were learned from 48 nodes" in crit and "gemm-flops" in crit and "margin: Alg. 2" in crit
    tele = html[html.index("Machines that drifted"):html.index("<h2>Data quality")]
    assert "confirmed in the last 30 days" in tele and "DCGM_FI_" in tele and "minder" in tele


def _capacity_adds_up(html: str) -> None:
    """Every day's capacity split sums to 100% in the chart's data; the headline's split, its groups and what
    reliability can win back add up as printed, and the capacity table prints the headline's parts."""
    spec = embedded_specs(html)["capacity"]
    per_day = pl.DataFrame(spec["datasets"]["capacity"]).group_by("day").agg(pl.col("share").sum())
    assert per_day.height >= 1 and (per_day["share"] - 1).abs().max() < 2e-3, per_day.sort("share")
    assert_splits_add_up(html, {"capacity", "failures", "preemptions", "win_back"})
    table = [float(x) for x in re.findall(r'<td class="n" data-share="([^"]+)">', html)]
    assert len(table) == 7 and round(sum(table), 1) == 100.0
    infra, second = _shares(html, ("infrastructure", "second_order"))
    win_back = next(s for s in splits(html) if s["split"] == "win_back")
    assert win_back["parts"] == [infra, second]


def _text(html: str, ident: str) -> str:
    """A caption's text, tags removed, whitespace collapsed."""
    body = re.search(rf'<p class="caption" id="{ident}">(.*?)</p>', html, re.S).group(1)
    return re.sub(r"\s+", " ", re.sub(r"<[^>]+>", "", body))


def _number(text: str) -> float:
    return float(text.replace(",", "").rstrip("%"))


def _captions_agree(html: str) -> None:
    """Every number or claim a caption makes about its chart is in that chart's data."""
    specs = embedded_specs(html)
    # capacity: the nodes and GPUs named make each day's capacity, as the chart's parts add up to it
    sizes = re.findall(r"([\d,]+) nodes? of (\d+) GPUs", _text(html, "cap-capacity"))
    per_day = {}
    for v in specs["capacity"]["datasets"]["capacity"]:
        per_day[v["day"]] = per_day.get(v["day"], 0) + v["gpu_hours"]
    capacity = 24 * sum(_number(n) * int(g) for n, g in sizes)
    assert sizes and all(total == pytest.approx(capacity, rel=1e-3) for total in per_day.values())  # 4 significant digits
    # how jobs end: each state's shares, as the chart has them
    status = {(v["state"], v["measure"]): v["share"] for v in specs["status"]["datasets"]["status"]}
    said = re.findall(r"(\w+) ([\d.]+)% of instances / ([\d.]+)% of GPU-hours", _text(html, "cap-status"))
    assert said
    for state, by_count, by_hours in said:
        assert abs(status[(state, "by job count")] * 100 - float(by_count)) < 0.051
        assert abs(status[(state, "by GPU-hours")] * 100 - float(by_hours)) < 0.051
    # the rolling rate: drawn when a point is, else said in words ("Not drawn yet"), never an empty frame
    drawn = "failure_rate" in specs
    assert not drawn or any(v["rate"] is not None for v in specs["failure_rate"]["datasets"]["rates"])
    assert ("Not drawn yet" in _text(html, "cap-failure_rate")) == (not drawn)
    # MTTF: the projected sizes and hours named are the first and last points drawn
    projected = specs["mttf"]["datasets"]["projection"] if "mttf" in specs else []
    named = re.findall(r"([\d,]+) GPUs would fail every ([\d.,]+) h", _text(html, "cap-mttf"))
    if "mttf" not in specs:
        assert not named and "Nothing to draw yet" in _text(html, "cap-mttf")
    elif projected:
        ends = [projected[0], projected[-1]]
        assert [(_number(g), _number(h)) for g, h in named] == [
            (p["gpus"], pytest.approx(p["projected_mttf_hours"], rel=1e-3, abs=0.006)) for p in ends]
    else:
        assert not named and "no projection is drawn" in _text(html, "cap-mttf")
    # ETTR: as many runs as the circles hold; the curve's span and methods as drawn
    ettr, cap = specs["ettr"]["datasets"], _text(html, "cap-ettr")
    assert _number(re.search(r"ratio of ([\d,]+) job runs?", cap).group(1)) == sum(c["runs"] for c in ettr["runs"])
    curve = ettr["expected"]
    assert _number(re.search(r"drawn up to ([\d,]+) GPUs", cap).group(1)) == max(p["n_gpus"] for p in curve)
    for method, phrase in (("Monte Carlo", "Monte Carlo simulation of the run from"), ("no progress", "dotted")):
        sizes = [p["n_gpus"] for p in curve if p["method"] == method]
        assert (phrase in cap) == bool(sizes), (method, cap)
        if sizes and method == "Monte Carlo":
            assert _number(re.search(r"run from ([\d,]+) GPUs", cap).group(1)) == min(sizes)
    # the sweep: the sizes listed are the lines drawn, the rate is the dashed rule's
    sweep, cap = specs["sweep"]["datasets"], _text(html, "cap-sweep")
    listed = re.search(r"for jobs of ([\d, ]+) GPUs", cap).group(1)
    assert sorted(_number(g) for g in listed.split(", ")) == sorted({p["gpus"] for p in sweep["sweep"]})
    assert _number(re.search(r"cluster's rate, ([\d.,]+) per", cap).group(1)) == pytest.approx(sweep["here"][0]["r"], rel=1e-3, abs=0.006)  # data: 4 significant digits
    # lost GPU-hours: every kind drawn is one the caption names
    kinds = {v["kind"] for v in specs["loss"]["datasets"]["loss"]}
    assert kinds <= {"infrastructure failure", "user or other failure", "second-order preemption", "other preemption"}
    # co-occurrence: each pair's share and count are a cell of the chart
    cells = {(v["cause_a_label"], v["cause_b_label"]): v for v in specs["cooccurrence"]["datasets"]["cooccurrence"]}
    for a, b, share, n in re.findall(r"([^;.:]+?) with ([^;:]+?): (\d+)% \(([\d,]+) failures?\)", _text(html, "cap-cooccurrence")):
        cell = cells[(a.strip(), b.strip())]
        assert round(cell["share_of_a"] * 100) == int(share) and cell["failures_with_both"] == _number(n)


def _shares(html: str, keys: tuple[str, ...]) -> list[float]:
    """The capacity table's shares (percent, as printed) of the named parts."""
    order = ["productive", "infrastructure", "second_order", "user_failures", "preemptions", "stragglers", "idle"]
    values = [float(x) for x in re.findall(r'<td class="n" data-share="([^"]+)">', html)]
    return [values[order.index(k)] for k in keys]


def test_capacity_split_on_the_hand_made_sample(tmp_path):
    from analysis import warehouse
    from analysis.derive import metrics
    from analysis.ingest.engine import ingest_directory
    from analysis.derive.taxonomy import load
    from assets.pure_builds import build_all
    con = warehouse.connect(tmp_path / "w.duckdb")
    ingest_directory(con, demo_source())
    build_all(con, load(), metrics.MetricsConfig())
    from reports.render import render_with_headline
    path, numbers = render_with_headline(con, date(2024, 3, 1), tmp_path / "out")  # numbers: the report asset's metadata
    html = path.read_text()
    con.close()
    _capacity_adds_up(html)
    _captions_agree(html)
    infra, second = _shares(html, ("infrastructure", "second_order"))
    assert 100 * numbers["reliability_can_win_back"] == pytest.approx(infra + second, abs=0.11)  # printed to 0.1
    assert {"goodput_7d", "capacity_productive", "capacity_idle", "failures_per_1000_node_days"} <= set(numbers)
    assert all(isinstance(v, (float, str)) for v in numbers.values())
    # the drained and down nodes are named where they are counted, and the top nodes say their state
    card = re.search(r'<div class="v">(\d+)</div><div class="k">nodes drained or down.*?</div>', html, re.S)
    named = re.findall(r'<span title="[^"]*">(\w+) \((DOWN|DRAIN)\)</span>', card.group(0))
    assert int(card.group(1)) == len(named) == 2 and {h for h, _ in named} == {"gpu003", "gpu005"}
    rows = re.findall(r"<tr><td>(\w+)</td><td class=\"n\">([\d,]+)</td>(?:<td[^>]*>[^<]*</td>){3}<td>([^<]*)</td>",
                      re.search(r'<table id="top-nodes">.*?</table>', html, re.S).group(0))
    # causes in words, the id in a tooltip, in tables and in the charts' legends
    assert '<span title="gpu_unavailable">GPU lost (off the bus)</span>' in html
    # a one-day sample: the 30-day rolling rate is not drawn, the caption says why and names the failures so far
    caption = re.search(r'<p class="caption" id="cap-failure_rate">(.*?)</p>', html, re.S).group(1)
    assert "failure_rate" not in embedded_specs(html) and "Not drawn yet" in caption
    assert '<span data-cause="infiniband_link"><span title="infiniband_link">InfiniBand link</span> 1</span>' in caption
    # the MTTF projection stops at a multiple of the largest job measured, and says what it is
    mttf = embedded_specs(html)["mttf"]
    largest = max(v["bucket_gpus"] for v in mttf["datasets"]["mttf"])
    projected = [v["gpus"] for v in mttf["datasets"]["projection"]]
    assert len(projected) == 2 or max(projected) <= 16 * largest, (largest, projected)
    assert "projection: 1/N" in json.dumps(mttf)
    # per account and partition: the lost GPU-hours are the sum of their parts
    table = re.search(r'<table id="loss-by-account">.*?</table>', html, re.S).group(0)
    for cells in re.findall(r"<tr><td>[^<]*</td><td>[^<]*</td>((?:<td class=\"n\">[^<]*</td>){5})</tr>", table):
        total, *parts = (float(x.replace(",", "")) for x in re.findall(r">([^<]*)<", cells) if x)
        assert abs(total - sum(parts)) <= 0.25  # each shown to a tenth of a GPU-hour
    lost = [float(r[1].replace(",", "")) for r in rows]
    assert lost == sorted(lost, reverse=True) and rows[0][0] == "gpu003" and rows[0][2].startswith("DOWN")


def test_capacity_split_and_captions_on_the_simulated_report(report):
    _capacity_adds_up(report.read_text())
    _captions_agree(report.read_text())


def _why(db: Path, job_id: str) -> dict:
    out = CliRunner().invoke(main, ["why", job_id, "--db", str(db), "--json"])
    assert out.exit_code == 0, out.output
    return json.loads(out.output)


def _table(html: str, ident: str) -> list[str]:
    """The body rows of a table, as HTML."""
    body = re.search(rf'<table id="{ident}">(.*?)</table>', html, re.S)
    return re.findall(r"<tr><td>.*?</tr>", body.group(1), re.S) if body else []


@pytest.mark.parametrize("which", ["report", "sample_report"])
def test_the_report_agrees_with_goodput_why_and_ettr(which, request):
    """One number per fact: the report's failures are those `goodput why` lists, each job has one size
    bucket in every chart, a node one lemon score in every table, and r is `goodput ettr --from-db`'s."""
    path = request.getfixturevalue(which)
    html, db = path.read_text(), path.parents[2] / "w.duckdb"
    specs = embedded_specs(html)
    con = duckdb.connect(str(db), read_only=True)
    try:
        runs = con.sql("SELECT r.run_id, list(DISTINCT r.job_id) AS jobs, any_value(e.failures) AS failures "
                       "FROM job_runs r JOIN job_run_ettr e USING (run_id) GROUP BY r.run_id").pl()
        # runs that failed or were requeued, those with requeues first (a maintenance requeue is not a failure)
        eventful = con.sql("SELECT run_id FROM job_runs WHERE state IN ('REQUEUED', 'FAILED', 'NODE_FAIL') GROUP BY "
                           "run_id ORDER BY bool_or(state = 'REQUEUED') DESC, run_id LIMIT 12").pl()["run_id"].to_list()
        sizes = {  # what each chart covers, sized by the rule the report states (GPUs up to a multiple of 8)
            "loss": con.sql("SELECT n_gpus FROM goodput_losses WHERE end_time < $d::TIMESTAMP + INTERVAL 1 DAY",
                            params={"d": path.stem.removeprefix("reliability-")}).pl()["n_gpus"],
            "mttf": con.sql("SELECT n_gpus FROM job_failure_causes WHERE infra_failure").pl()["n_gpus"]}
        lemons = dict(con.sql("SELECT host, score FROM lemon_scores WHERE as_of = (SELECT max(as_of) FROM node_actions)")
                      .fetchall())
    finally:
        con.close()
    # crash loops and the runs' failures: what `goodput why` lists as failures, summed over the run's job ids
    by_run = {r["run_id"]: r for r in runs.iter_rows(named=True)}
    loops = [re.findall(r"<td[^>]*>([^<]*)</td>", row) for row in _table(html, "crash-loops")]
    checked = [by_run[r] for r in eventful]
    for run_id, failures in [(c[0], int(c[4])) for c in loops] + [(r["run_id"], r["failures"]) for r in checked]:
        said = sum(_why(db, job)["failures"] for job in by_run[run_id]["jobs"])
        assert failures == said == by_run[run_id]["failures"], run_id
    if which == "report":  # the crash loop made by hand: its two requeues for maintenance are not failures
        assert [c[0] for c in loops] == [LOOP] and loops[0][4] == "5"
        why = _why(db, LOOP)["instances"]
        assert [i["maintenance"] for i in why if i["state"] == "REQUEUED"] == [True, True]
        text = CliRunner().invoke(main, ["why", LOOP, "--db", str(db)]).output
        assert "8 instance(s), 5 failures" in text
        assert text.count("REQUEUED (not a failure: requeued while its node was in planned maintenance)") == 2
    assert checked
    # one size bucket per job: each chart's buckets are those of the jobs it shows, by the rule stated
    bucket = lambda s: {8 * -(-max(n, 1) // 8) for n in s}  # noqa: E731
    assert "Job size</dt><dd>Every chart and table by job size" in html
    assert {v["bucket_gpus"] for v in specs["loss"]["datasets"]["loss"]} == bucket(sizes["loss"])
    assert {v["bucket_gpus"] for v in specs["mttf"]["datasets"]["mttf"]} == bucket(sizes["mttf"])
    ettr_runs = pl.DataFrame(specs["ettr"]["datasets"]["medians"])
    assert all(g == f"{s - 7}–{s}" and s % 8 == 0 for s, g in ettr_runs.select("size", "gpus").rows())
    if which == "report":  # the simulated 192-GPU runs are in the 192 bucket in all three charts
        assert all(192 in {v[k] for v in specs[c]["datasets"][d]} for c, d, k in
                   (("loss", "loss", "bucket_gpus"), ("mttf", "mttf", "bucket_gpus"), ("ettr", "medians", "size")))
    # a node's lemon score: the same in the lemon table, the action table and lemon_scores
    scores = {}
    for table in ("lemons", "node-actions"):
        for row in _table(html, table):
            host = re.match(r"<tr><td>([^<]+)</td>", row).group(1)
            shown = re.search(r'data-lemon-score="([^"]+)"', row)
            if shown:
                scores.setdefault(host, set()).add(float(shown.group(1)))
    assert scores and all(v == {lemons[h]} for h, v in scores.items()), (scores, lemons)
    assert any(h in " ".join(_table(html, "lemons")) for h in re.findall(r"<tr><td>([^<]+)</td>", " ".join(
        _table(html, "node-actions"))))  # a node in both tables
    # r: the card's, the ETTR curve's and the sweep's are `goodput ettr --from-db`'s
    out = CliRunner().invoke(main, ["ettr", "--from-db", "--db", str(db), "--json"])
    measured = json.loads(out.output)["failures_per_1000_node_days"]
    assert float(re.search(r'data-r="([^"]+)"', html).group(1)) == pytest.approx(measured, rel=1e-12)
    assert f"{measured:.2f} per 1,000 node-days" in _text(html, "cap-ettr")
    assert specs["sweep"]["datasets"]["here"][0]["r"] == pytest.approx(measured, rel=1e-3)


def test_largest_runs_card_counts_only_runs_up_to_the_day_and_one_node_reads_singular(demo_warehouse, tmp_path):
    """A report for an older day does not count runs that ended after it (the ETTR chart's rule), and criteria
    learned from one node say so in the singular."""
    db = tmp_path / "w.duckdb"
    shutil.copy(demo_warehouse, db)
    con = duckdb.connect(str(db))
    for run_id, gpus, ettr, end in (("big-then", 128, 0.5, "2024-03-01 12:00"), ("bigger-later", 256, 0.9, "2024-03-05 12:00")):
        con.execute("INSERT INTO job_run_ettr (run_id, n_gpus, scheduled_s, ettr, last_end) VALUES (?, ?, ?, ?, ?)",
                    [run_id, gpus, 8 * 3600, ettr, end])
    con.execute("UPDATE benchmark_criteria SET n_hosts = 1")
    html = render_report(con, date(2024, 3, 2), tmp_path / "out").read_text()
    con.close()
    card = html[html.index('<div class="k">median ETTR of the largest runs'):]
    assert "(1 run of 128+ GPUs)" in re.sub(r"\s+", " ", card[:card.index("</div>")])  # not the one ending later
    assert '<div class="v">0.500</div><div class="k">median ETTR of the largest runs' in html
    assert "were learned from 1 node's validation runs" in html and "1 nodes" not in html


# --- the nodes' own history: interruptions, availability, floods, repeat offenders, sources, unknown reasons ---

def _cells_of(html: str, ident: str, attr: str = "data-cause") -> list[tuple[str, bool, list[str]]]:
    """(key, planned, cell texts without tags) per body row of a table whose rows carry ``attr``."""
    body = re.search(rf'<table id="{ident}">(.*?)</table>', html, re.S)
    assert body, f"no table {ident}"
    rows = re.findall(rf'<tr {attr}="([^"]+)"([^>]*)>(.*?)</tr>', body.group(1), re.S)
    return [(key, 'data-planned="true"' in rest, [re.sub(r"<[^>]+>", "", c) for c in re.findall(r"<td[^>]*>(.*?)</td>", cells, re.S)])
            for key, rest, cells in rows]


def _day_of(report: Path) -> date:
    return date.fromisoformat(report.stem.removeprefix("reliability-"))


def test_interruptions_are_node_incidents_per_cause(report):
    """Llama 3's table: each unplanned cause's count is of the node incidents up to the day that interrupted
    something (the user's own left out), planned work counted from the planned outages apart; shares of the
    unplanned, rates per 1,000 node-days of node_availability, mean repair from drain to return."""
    from reports.render import fmt_num, fmt_pct
    html, day = report.read_text(), _day_of(report)
    con = duckdb.connect(str(report.parents[2] / "w.duckdb"), read_only=True)
    try:
        end = {"end": datetime.combine(day, datetime.min.time()) + timedelta(days=1)}
        incidents = con.execute("""
            SELECT i.host, i.first_event, i.last_event, i.cause, i.drained_at, i.returned_at, i.from_operator, i.ticket_id
            FROM node_incidents i JOIN taxonomy_causes t USING (cause)
            WHERE t.domain <> 'user' AND NOT t.planned AND i.first_event < $end""", end).fetchall()
        every = con.execute("SELECT host, first_event, drained_at FROM node_incidents").fetchall()
        outages = con.execute("SELECT host, time_start, time_end FROM node_outages").fetchall()
        blamed = con.execute("SELECT host, event_time FROM failure_attribution WHERE is_primary AND end_time < $end",
                             end).fetchall()
        planned = dict(con.execute("SELECT cause, count(*) FROM node_outages WHERE planned AND time_start < $end "
                                   "GROUP BY cause", end).fetchall())
        node_days, nodes = con.execute("SELECT sum(hours_observed) / 24, count(*) FROM node_availability").fetchone()
        first = con.execute("SELECT min(first_time)::DATE FROM source_spans").fetchone()[0]
    finally:
        con.close()
    # computed here, not in SQL: a drain is the latest incident's before it; an incident interrupts when it took its
    # node out, a ticket or an operator's record began it, or a job failure was blamed on it, and not when its node
    # was already out of service
    latest = {}
    for host, first_event, drained in every:
        if drained is not None and (latest.get((host, drained)) is None or first_event > latest[(host, drained)]):
            latest[(host, drained)] = first_event
    per_cause = defaultdict(list)
    for host, began, last, cause, drained, returned, operator, ticket in incidents:
        own = drained if drained is not None and latest[(host, drained)] == began else None
        interrupted = ((own is not None and own < end["end"]) or operator or ticket is not None
                       or any(h == host and began <= t <= last for h, t in blamed))
        already_out = any(h == host and s < began - timedelta(minutes=5) and (e is None or e > began) for h, s, e in outages)
        if interrupted and not already_out:
            per_cause[cause].append(((returned - own).total_seconds() / 3600)
                                    if own is not None and returned is not None and returned < end["end"] else None)
    unplanned = {c: (len(v), (sum(x for x in v if x is not None) / len([x for x in v if x is not None])
                              if any(x is not None for x in v) else None), sum(x is not None for x in v))
                 for c, v in per_cause.items()}
    assert unplanned and planned  # the simulated cluster has both
    rows = _cells_of(html, "interruptions")
    shown = {cause: cells for cause, is_planned, cells in rows if not is_planned}
    assert {c: int(v[2].replace(",", "")) for c, v in shown.items()} == {c: n for c, (n, _, _) in unplanned.items()}
    assert {c: int(v[2]) for c, p, v in rows if p} == planned
    total = sum(n for n, _, _ in unplanned.values())
    for cause, (n, repair, repaired) in unplanned.items():
        component, label, _, share, rate, mean_repair = shown[cause]
        assert share == fmt_pct(n / total) and rate == fmt_num(1000 * n / node_days, 2)
        assert mean_repair == ("—" if repair is None else f"{fmt_num(repair, 1)} ({repaired})"), cause
        assert "_" not in label and component in ("GPU", "Host", "Network", "Dependency", "Maintenance", "Software",
                                                  "Facility", "User", "Unknown")
    counts = [int(v[2].replace(",", "")) for c, p, v in rows if not p]
    assert counts == sorted(counts, reverse=True) and [p for _, p, _ in rows] == sorted(p for _, p, _ in rows)
    summary = re.sub(r"<[^>]+>", "", re.search(r'<p id="interruptions-summary">(.*?)</p>', html, re.S).group(1))
    assert f"{total} unplanned interruptions of {nodes} nodes from {first} to {day}" in summary
    assert f"{fmt_num(1000 * total / node_days, 2)} per 1,000 node-days" in summary


def test_availability_is_the_outages_own(report):
    """Per cause, MTTR is the mean length of the outages that ended; the nodes out longest are node_availability's,
    each with its longest outage's reason as the operator wrote it."""
    from reports.render import AVAILABILITY_NODES, fmt_num
    html = report.read_text()
    con = duckdb.connect(str(report.parents[2] / "w.duckdb"), read_only=True)
    try:
        closed = dict(con.execute("SELECT cause, avg(hours) FILTER (WHERE NOT still_out) FROM node_outages "
                                  "GROUP BY cause").fetchall())
        hours = dict(con.execute("SELECT host, sum(hours) FILTER (WHERE NOT planned) FROM node_outages "
                                 "GROUP BY host").fetchall())
        ranked = [h for (h,) in con.execute("SELECT host FROM node_outages GROUP BY host ORDER BY coalesce(sum(hours) "
                                            "FILTER (WHERE NOT planned), 0) DESC, sum(hours) FILTER (WHERE planned) "
                                            "DESC NULLS LAST, host LIMIT $n", {"n": AVAILABILITY_NODES}).fetchall()]
        longest = dict(con.execute("SELECT host, arg_max(reason, hours) FROM node_outages GROUP BY host").fetchall())
        out = con.execute("SELECT count(DISTINCT host) FROM node_outages").fetchone()[0]
    finally:
        con.close()
    by_cause = {cause: cells for cause, _, cells in _cells_of(html, "availability-by-cause")}
    assert set(by_cause) == set(closed)
    for cause, mttr in closed.items():
        assert by_cause[cause][6] == (fmt_num(mttr, 1) if mttr is not None else "still out"), cause
    nodes = _cells_of(html, "availability-nodes", "data-host")
    assert len(nodes) == min(out, AVAILABILITY_NODES) and [h for h, _, _ in nodes] == ranked
    top, _, cells = nodes[0]
    assert cells[3].startswith(fmt_num(hours[top], 1)) and longest[top] in cells[7]


def test_repeat_offenders_in_the_node_models(report):
    html = report.read_text()
    con = duckdb.connect(str(report.parents[2] / "w.duckdb"), read_only=True)
    try:
        want = con.execute("SELECT host, incidents, escalation, top_cause_incidents FROM repeat_offenders "
                           "WHERE as_of = (SELECT max(as_of) FROM repeat_offenders)").fetchall()
    finally:
        con.close()
    assert want  # the simulated lemon
    rows = {host: cells for host, _, cells in _cells_of(html, "repeat-offenders", "data-host")}
    section = html[html.index("<h2>Nodes to act on"):html.index("<h2>Validation runs")]
    assert 'id="repeat-offenders"' in section
    for host, incidents, escalation, top in want:
        assert rows[host][1].startswith(f"{incidents} in ") and rows[host][2].endswith(f"×{top}")
        assert rows[host][4] == ("RMA" if escalation == "rma" else "repair")
        assert "_" not in rows[host][2]  # the cause in words, not its id


def _later_copy(report: Path, dest: Path) -> duckdb.DuckDBPyConnection:
    dest.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(report.parents[2] / "w.duckdb", dest / "w.duckdb")
    return duckdb.connect(str(dest / "w.duckdb"))


def test_sources_ending_on_different_days_are_named(report, tmp_path):
    """A note names each source's last day only when they differ: Slurm's node events running a month past the
    rest make the report's day theirs, and the note says so."""
    from analysis import sql
    from reports.render import sources_note
    same = pl.DataFrame({"source": ["slurm", "kernel"], "first_day": [date(2024, 3, 1)] * 2, "last_day": [date(2024, 3, 14)] * 2})
    assert sources_note(same, date(2024, 3, 14)) is None
    con = _later_copy(report, tmp_path)
    try:
        con.execute("DELETE FROM benchmark_results")  # weekly runs end early: without them all sources end one day
        day = sql.scalar(con, "ops/last_data_day")
        html = render_report(con, day, tmp_path / "same").read_text()
        assert 'id="sources-note"' not in html
        later = day + timedelta(days=30)
        con.execute("INSERT INTO node_state_periods VALUES ('gpu0001', $t, $t + INTERVAL 2 HOUR, 'DRAIN', 'later', "
                    "'root', 'x.txt', 1)", {"t": datetime.combine(later, datetime.min.time()) + timedelta(hours=3)})
        assert sql.scalar(con, "ops/last_data_day") == later
        html = render_report(con, later, tmp_path / "later").read_text()
    finally:
        con.close()
    note = re.sub(r"\s+", " ", re.search(r'<p class="sub" id="sources-note">(.*?)</p>', html, re.S).group(1))
    assert f"slurm_events runs to {later}" in note and f"this report covers to {later}" in note
    assert re.search(rf"health, kernel, slurm, switch, telemetry and tickets end {day}", note), note


def test_floods_and_unknown_reasons_are_shown_escaped(report, tmp_path):
    """A flood of one event is one row with its count; an operator's text no rule knows is listed, hostile or not,
    as text; the hint says where a rule goes."""
    day = _day_of(report)
    con = _later_copy(report, tmp_path)
    try:
        con.execute("""INSERT INTO classified_events (event_time, host, source, kind, code, event_severity, message,
                           device, file, line_no, rule, cause, domain, severity, transient, priority, distributed)
                       SELECT $t + to_seconds(30 * k), 'gpu0042', 'kernel', 'xid', '95', 'error', $msg || k, 'GPU3',
                              'flood.log', k, 'xid-95', 'gpu_memory', 'hardware', 'critical', false, 50, false
                       FROM range(150) t(k)""", {"t": datetime.combine(day, datetime.min.time()), "msg": EVIL})
        con.execute("INSERT INTO operator_reasons VALUES ('slurm', $text, NULL, NULL, 7, 2, $t, $t, ['gpu0001'])",
                    {"text": EVIL + " bad optic", "t": datetime.combine(day, datetime.min.time())})
        html = render_report(con, day, tmp_path / "out").read_text()
    finally:
        con.close()
    assert EVIL not in html
    floods = _cells_of(html, "event-floods", "data-host")
    assert floods[0][0] == "gpu0042" and floods[0][2][3] == "150" and floods[0][2][1] == "GPU memory (ECC)"
    assert "&lt;script&gt;alert(1)&lt;/script&gt;0" in floods[0][2][6] and "xid 95 on GPU3" in floods[0][2][2]
    table = re.search(r'<table id="unclassified-reasons">(.*?)</table>', html, re.S).group(1)
    assert "<code>&lt;script&gt;alert(1)&lt;/script&gt; bad optic</code>" in table
    assert "1 distinct operator text (7 records" in html and "<code>reasons:</code>" in html and "--rules FILE" in html


def test_empty_sections_are_left_out(report, tmp_path):
    """No incident, outage, flood, repeat offender or unknown reason: none of their sections, not an empty table;
    nor on a warehouse from before repeat offenders, episodes and reason rules (their tables and views absent)."""
    day = _day_of(report)
    con = _later_copy(report, tmp_path)
    try:
        before = render_report(con, day, tmp_path / "before").read_text()
        for statement in ("DELETE FROM node_incidents", "DELETE FROM node_outages", "DROP TABLE repeat_offenders",
                          "DROP VIEW event_episodes", "DROP VIEW unclassified_reasons"):
            con.execute(statement)
        html = render_report(con, day, tmp_path / "out").read_text()
    finally:
        con.close()
    assert "Interruptions by root cause" in before and 'id="availability-nodes"' in before
    for ident in ("interruptions", "availability-by-cause", "availability-nodes", "repeat-offenders", "event-floods",
                  "unclassified-reasons"):
        assert f'id="{ident}"' not in html, ident
    assert "<h2>Interruptions by root cause" not in html and "<h2>Node availability" not in html
    assert "<h2>Event floods" not in html and "<h2>Event floods" not in before  # the simulator floods nothing
    assert 'id="node-actions"' in html  # the node models' other tables stay


def _visible_text(html: str) -> str:
    """The page's text as a reader sees it: no scripts, styles, tags or attributes (titles hold ids on purpose)."""
    body = html[html.rindex("</head>"):] if "</head>" in html else html  # the inlined JavaScript (in the head) writes one too
    body = re.sub(r"<script.*?</script>|<style.*?</style>|<code>.*?</code>", " ", body, flags=re.S)
    return re.sub(r"\s+", " ", html_lib.unescape(re.sub(r"<[^>]+>", " ", body)))


def test_the_first_screen_decides(report):
    """The headline names the node that cost most with its cause and share, right before the nodes to act on; the
    splits add up as printed; causes are words; no NaN, None, long raw float or column of dashes anywhere."""
    from analysis.derive.taxonomy import load as load_taxonomy

    html = report.read_text()
    con = duckdb.connect(str(report.parents[2] / "w.duckdb"), read_only=True)
    try:
        infra = con.execute("SELECT sum(lost_gpu_hours) FROM goodput_losses WHERE infra").fetchall()[0][0]
        host, lost, cause = con.execute(
            "SELECT host, sum(lost), arg_max(cause, lost) FROM (SELECT a.host, a.cause, sum(l.lost_gpu_hours) AS lost "
            "FROM goodput_losses l JOIN job_failure_causes a USING (job_id, instance) WHERE l.infra AND a.host IS NOT NULL "
            "GROUP BY a.host, a.cause) GROUP BY host ORDER BY 2 DESC, 1 LIMIT 1").fetchall()[0]
    finally:
        con.close()
    labels = load_taxonomy().labels()
    first = re.search(r'<ol id="top-actions">\s*<li data-host="([^"]+)" data-share="([^"]+)">(.*?)</li>', html, re.S)
    assert first[1] == host and float(first[2]) == pytest.approx(lost / infra)
    said = _visible_text(first[3])
    assert labels.get(cause, cause) in said and f"{round(100 * lost / infra)}% of the GPU-hours lost" in said
    assert html.index('id="first-screen"') < html.index("<h2>Nodes to act on</h2>") < html.index("<h2>Where the capacity")
    assert_splits_add_up(html, {"capacity", "failures", "preemptions", "win_back"})
    text = _visible_text(html)
    # ids that read as ids (gpu_unavailable; "user" and "nvlink" are also words and benchmark names)
    shown_ids = {c for c in labels if "_" in c and labels[c] != c
                 and re.search(rf"(?<![\w/-]){re.escape(c)}(?![\w/-])", text)}
    assert not shown_ids, shown_ids
    assert not re.search(r"\bNaN\b|\bNone\b", text)
    assert not re.search(r"\d\.\d{5,}", text), re.findall(r".{30}\d\.\d{5,}.{10}", text)[:5]
    for table in re.findall(r"<table[^>]*>.*?</table>", html, re.S):
        rows = [re.findall(r"<td[^>]*>(.*?)</td>", r, re.S) for r in re.findall(r"<tr>(.*?)</tr>", table, re.S)]
        rows = [r for r in rows if r]
        for col in range(max((len(r) for r in rows), default=0)):
            cells = [re.sub(r"<[^>]+>", "", r[col]).strip() for r in rows if len(r) > col]
            assert not cells or set(cells) != {"—"}, table[:120]
    assert "$" not in text and "USD" not in text  # no price in goodput.yaml: GPU-hours only


def _priced(report, out, price) -> str:
    """The report of ``report``'s day rendered again into ``out`` with ``price``."""
    from analysis import warehouse
    from reports.render import render_with_headline

    day = date.fromisoformat(report.stem.removeprefix("reliability-"))
    con = warehouse.connect(report.parents[2] / "w.duckdb", read_only=True)
    try:
        return render_with_headline(con, day, out, price=price)[0].read_text()
    finally:
        con.close()


def _assert_spans_priced(html: str, per_gpu_hour: float) -> None:
    """Every '(cost)' span is its GPU-hours x the price, shown rounded."""
    spans = re.findall(r'<span class="cost" data-gpu-hours="([^"]+)" data-cost="([^"]+)">\((\$[\d,]+)\)</span>', html)
    assert len(spans) >= 4
    for hours, cost, shown in spans:
        assert float(cost) == pytest.approx(float(hours) * per_gpu_hour) and shown == f"${float(cost):,.0f}"


def test_a_price_turns_gpu_hours_into_money(report, tmp_path):
    """With goodput.yaml's price every cost the report prints is its GPU-hours x the price (the partition's where
    one is given), and the per-account trend is in money."""
    price = {"per_gpu_hour": 2.5, "currency": "USD", "partitions": {"learn": 4.0}}
    html = _priced(report, tmp_path, price)
    _assert_spans_priced(html, 2.5)
    cells = re.findall(r'data-cost="([^"]+)" data-gpu-hours="([^"]+)" data-partition="([^"]+)">\$([\d,]+)<', html)
    assert cells and any(p == "learn" for _, _, p, _ in cells)
    for cost, hours, partition, shown in cells:
        rate = price["partitions"].get(partition, price["per_gpu_hour"])
        assert float(cost) == pytest.approx(float(hours) * rate) and shown == f"{float(cost):,.0f}"
    assert '<table id="account-trend">' in html and "Cost of the GPU-hours lost per account" in html
    # the templates' environment is kept for the process: the next render in it prices with its own price
    _assert_spans_priced(_priced(report, tmp_path / "again", {**price, "per_gpu_hour": 3.0}), 3.0)


def test_one_score_everywhere(report):
    """The number beside a node is the action score (node_actions.score) in the report's node actions, blocklist.json,
    drain.sh's reasons and `goodput why HOST` alike."""
    html, out = report.read_text(), report.parents[1] / "exports"
    shown = dict(re.findall(r'<tr><td>([\w.-]+)</td><td>(?:(?!</tr>).)*?data-action-score="([^"]+)"', html, re.S))
    listed = {e["host"]: f"{e['score']:.2f}" for e in json.loads((out / "blocklist.json").read_text())["entries"]}
    planned = dict(re.findall(r"^([\w.-]+)\|drain_\w+\|[^|\n]*\|[^|\n]*\|goodput: \S+ \S+ score=([\d.]+)$",
                              (out / "drain.sh").read_text(), re.M))
    assert shown and planned and set(planned) <= set(shown) <= set(listed)
    db = report.parents[2] / "w.duckdb"
    for host, score in shown.items():
        assert listed[host] == score and planned.get(host, score) == score, host
        why = CliRunner().invoke(main, ["why", "--db", str(db), host]).output
        assert f"(action score {score})" in why, why[:400]
