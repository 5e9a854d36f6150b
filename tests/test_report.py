"""The reliability report: offline, escaped, and drawn by a real browser."""
import re
import shutil
import subprocess
from html.parser import HTMLParser
from pathlib import Path

import pytest

from analysis.simulate.config import preset
from analysis.simulate.run import simulate
from pipelines.runner import run_pipeline

REPO = Path(__file__).resolve().parents[1]
CHARTS = ("goodput", "status", "failure_rate", "mttf", "ettr", "sweep", "loss", "cooccurrence")
EVIL = "<script>alert(1)</script>"


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
    result = run_pipeline(src, root / "w.duckdb", root / "out")
    assert result.success, result.report()
    assert result.report_path and result.report_path.exists()
    return result.report_path


def test_report_is_self_contained(report):
    html = report.read_text()
    assert (report.parent / "latest.html").read_text() == html
    refs = re.findall(r"<(?:script|link)\b[^>]*(?:src|href)\s*=\s*[\"']?\s*(https?:)?//", html, flags=re.I)
    assert refs == []
    assert "vegaEmbed" in html and all(f'id="c-{c}"' in html for c in CHARTS)


def test_log_text_is_escaped(report):
    html = report.read_text()
    assert EVIL not in html
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html  # shown as text in the failures table


class _ChartDivs(HTMLParser):
    """Which chart containers hold an <svg> or <canvas> after rendering."""

    def __init__(self):
        super().__init__()
        self.stack, self.drawn = [], set()

    def handle_starttag(self, tag, attrs):
        ident = dict(attrs).get("id") or ""
        self.stack.append(ident[2:] if ident.startswith("c-") else None)
        if tag in ("svg", "canvas"):
            self.drawn.update(c for c in self.stack if c)

    def handle_endtag(self, tag):
        if self.stack:
            self.stack.pop()


def _chromium() -> str | None:
    return shutil.which("chromium") or shutil.which("chromium-browser")


def test_report_renders_in_headless_chromium(report, tmp_path):
    browser = _chromium()
    if browser is None:
        pytest.skip("chromium is not installed and could not be installed (make test tries `apt-get install chromium`)")
    flags = [browser, "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
             "--disable-component-update", "--disable-sync", "--no-first-run", "--disable-dev-shm-usage",
             f"--user-data-dir={tmp_path / 'profile'}", "--virtual-time-budget=20000"]
    dom = subprocess.run([*flags, "--enable-logging=stderr", "--v=0", "--dump-dom", report.as_uri()],
                         capture_output=True, text=True, timeout=180)
    console = [line for line in dom.stderr.splitlines() if ":CONSOLE" in line]
    errors = [line for line in console if re.search(r"uncaught|error", line, flags=re.I)]
    assert errors == [], errors
    parser = _ChartDivs()
    parser.feed(dom.stdout)
    assert parser.drawn == set(CHARTS), f"not drawn: {set(CHARTS) - parser.drawn}"
    shot = REPO / "out" / "report-screenshot.png"
    shot.parent.mkdir(exist_ok=True)
    subprocess.run([*flags, "--window-size=1100,7000", f"--screenshot={shot}", report.as_uri()],
                   capture_output=True, timeout=180)
    assert shot.exists() and shot.stat().st_size > 50_000
