"""An XID flood on one GPU (bench/flood.py at test size): every line accounted for, the flood one episode in
event_episodes with its count, first and last time; a burst 2 hours later a second episode; `goodput why` shows
the flood once."""
from __future__ import annotations

from datetime import datetime, timedelta

import pytest

HOST, PCI, OTHER_PCI = "gpu0001", "0000:b3:00", "0000:b4:00"
START = datetime(2024, 3, 1, 0, 0, 0)
N = 20_000  # first burst: one line every 0.1 s, 33 minutes
STEP = timedelta(milliseconds=100)
SECOND_N = 50  # second burst, 2 hours after the first one's last line
GAP = timedelta(hours=2)


def _line(t: datetime, msg: str) -> str:
    return f"{t.strftime('%Y-%m-%dT%H:%M:%S.%f')}+0000 {HOST} kernel: {msg}"


def _xid(t: datetime, i: int, pci: str = PCI) -> str:
    return _line(t, f"NVRM: Xid (PCI:{pci}): 95, pid={40_000 + i * 7919 % 50_000}, name=python, Uncontained ECC error")


@pytest.fixture(scope="module")
def flood(tmp_path_factory):
    from analysis import warehouse
    from analysis.derive.taxonomy import load
    from analysis.ingest.engine import ingest_directory
    from assets.pure_builds import build_all

    root = tmp_path_factory.mktemp("flood")
    lines = []
    for i in range(N):
        lines.append(_xid(START + i * STEP, i))
        if i == 10:
            lines.append(_line(START + i * STEP, "nvidia-nvswitch0: open (major=510)"))  # unrelated: kind other
        if i == N // 2:
            lines += ["", "garbage without a timestamp header"]  # one skipped, one rejected
            lines.append(_xid(START + i * STEP, i, OTHER_PCI))  # another GPU: an episode of its own
    last = START + (N - 1) * STEP
    second = [last + GAP + i * STEP for i in range(SECOND_N)]
    lines += [_xid(t, N + i) for i, t in enumerate(second)]
    path = root / "src" / "kernel" / f"{HOST}.log"
    path.parent.mkdir(parents=True)
    path.write_text("\n".join(lines) + "\n")

    con = warehouse.connect(root / "w.duckdb")
    summary = ingest_directory(con, root / "src")
    build_all(con, load())
    files = con.sql("SELECT lines, row_lines, rows, rejects, skipped, merged, status FROM ingested_files").pl()
    rejects = con.sql("SELECT line_no, reason FROM rejects").pl()
    episodes = con.sql("SELECT * FROM event_episodes WHERE host = ? ORDER BY device, first_time",
                       params=[HOST]).pl()
    con.close()
    return {"lines": len(lines), "outcomes": summary.outcomes, "files": files, "rejects": rejects,
            "episodes": episodes, "last": last, "second": second, "db": root / "w.duckdb"}


def test_every_line_is_accounted_for(flood):
    (outcome,) = flood["outcomes"]
    assert outcome.status == "ok" and outcome.lines == flood["lines"]
    (f,) = flood["files"].iter_rows(named=True)
    assert f["lines"] == flood["lines"] == f["rows"] + f["rejects"] + f["skipped"] + f["merged"]
    assert (f["rows"], f["rejects"], f["skipped"], f["merged"]) == (flood["lines"] - 2, 1, 1, 0)
    assert f["row_lines"] == f["rows"] == outcome.rows and outcome.rejects == 1
    assert flood["rejects"].height == 1 and "timestamp header" in flood["rejects"]["reason"][0]


def test_the_flood_is_one_episode(flood):
    xid = flood["episodes"].filter((flood["episodes"]["kind"] == "xid") & (flood["episodes"]["code"] == "95"))
    on_gpu = xid.filter(xid["device"] == PCI)
    assert on_gpu.height == 2  # the flood, and the burst 2 hours later
    first = on_gpu.row(0, named=True)
    assert (first["events"], first["first_time"], first["last_time"]) == (N, START, flood["last"])
    assert first["message"].startswith(f"NVRM: Xid (PCI:{PCI}): 95, pid=40000,")  # the flood's first line
    assert first["source"] == "kernel" and first["severity"] == "critical"
    # the burst 2 hours later is a second episode
    again = on_gpu.row(1, named=True)
    assert (again["events"], again["first_time"], again["last_time"]) == (
        SECOND_N, flood["second"][0], flood["second"][-1])
    # the other GPU's one line is an episode of its own; nothing else on the host is an XID 95 episode
    other = xid.filter(xid["device"] == OTHER_PCI)
    assert other["events"].to_list() == [1] and xid.height == 3


def test_why_shows_the_flood_as_one_episode(flood):
    """`goodput why HOST` lists the flood once, with its count and its span, in the driver's words."""
    from click.testing import CliRunner

    from pipelines.cli import main

    out = CliRunner().invoke(main, ["why", "--db", str(flood["db"]), HOST])
    assert out.exit_code == 0, out.output
    lines = [line for line in out.output.splitlines() if f"x{N:,} " in line]
    assert len(lines) == 1 and f"{START:%Y-%m-%d %H:%M:%S} -> {flood['last']:%Y-%m-%d %H:%M:%S}" in lines[0]
    assert "kernel xid 95 0000:b3:00" in lines[0] and f"NVRM: Xid (PCI:{PCI}): 95" in lines[0]
    assert f"x{SECOND_N:<9,}" in out.output  # the burst 2 hours later: its own episode


@pytest.mark.parametrize("min_events", [1, SECOND_N, SECOND_N + 1])
def test_the_reports_floods_are_the_views_episodes(flood, min_events):
    """sql/report/event_floods.sql finds episodes only for the keys that repeat enough (the window over every
    event was most of the report's time), restating the chaining of sql/derive/view_event_episodes.sql: both
    must give the same episodes at the report's threshold, whatever it is."""
    from analysis import sql, warehouse

    con = warehouse.connect(flood["db"])
    try:
        day = START.date()
        cols = "host, source, kind, code, device, rule, cause, severity, events, first_time, last_time, file, line_no"
        report = sql.query(con, "report/event_floods", {"day": day, "min_events": min_events, "limit": 10_000})
        view = con.sql(f"SELECT {cols}, left(message, 300) AS message FROM event_episodes WHERE events >= $n "
                       "AND first_time < $day::TIMESTAMP + INTERVAL 1 DAY", params={"n": min_events, "day": day}).pl()
    finally:
        con.close()
    key = [*cols.split(", "), "message"]
    assert view.height >= 1 and report.height == view.height
    assert report.select(key).sort(key).equals(view.select(key).sort(key))
