"""Ingest memory bounded by design (issue 22): a 2 M-line port-counter file in a bounded peak RSS; a large
file's rows written part by part in one transaction; a log read in pieces gives the rows read whole; a rerun
over unchanged files asks the warehouse once, not once per file."""
import json
import os
import subprocess
import sys
from datetime import datetime
from pathlib import Path

import polars as pl
import pytest
from polars.testing import assert_frame_equal

from analysis import sql, warehouse
from analysis.ingest import one_file as ingest
from analysis.ingest.contract import IngestOptions, ParseContext
from analysis.ingest.engine import ingest_directory
from analysis.ingest.lines import LineStream, read_lines
from analysis.ingest.parsers import health, kernel, sacct, slurm_events, switch, telemetry
from analysis.ingest.parts import combine
from analysis.package_files import demo_source
from tests.conftest import REPO
from tests.test_sacct_parser import HEADER, row

DEMO = demo_source()
# Runs in a child process so that its peak RSS is its own: ingest every file under argv[1].
CHILD = """
import json, resource, sys
from pathlib import Path
from analysis import warehouse
from analysis.ingest.engine import ingest_directory
con = warehouse.connect(Path(sys.argv[2]))
out = ingest_directory(con, Path(sys.argv[1])).outcomes[0]
stored = con.execute("SELECT count(*) FROM telemetry").fetchall()[0][0]
con.close()  # DuckDB's checkpoint counts too
print(json.dumps({"status": out.status, "lines": out.lines, "rows": out.rows, "stored": stored,
                  "peak_bytes": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024}))
"""

FRESH = "import subprocess, sys; sys.exit(subprocess.run(sys.argv[1:]).returncode)"


def write_port_counters(path: Path, hosts: int, days: int) -> int:
    """The simulator's network/ports file (analysis/simulate/joblogs.py write_counters: every host's three HCA
    counters every 6 hours, the metric name quoted as csv.writer quotes it), written in bulk. -> lines."""
    names = ["symbol_error", "port_rcv_errors", "link_downed"]
    steps = days * 4
    i = pl.int_range(0, hosts * steps * 3, eager=True, dtype=pl.Int64)
    frame = pl.DataFrame({"i": i}).select(
        time=(pl.datetime(2024, 1, 1) + pl.duration(hours=(pl.col("i") // 3 % steps) * 6)).dt.strftime(
            "%Y-%m-%dT%H:%M:%SZ"),
        host=pl.format("node{}", (pl.col("i") // (steps * 3)).cast(pl.Utf8).str.zfill(4)),
        metric=pl.concat_str(pl.lit("node_infiniband_"), (pl.col("i") % 3).replace_strict(
            dict(enumerate(names)), return_dtype=pl.Utf8), pl.lit('_total{device="mlx5_0",port="1"}')),
        value=pl.col("i") * 7919 % 1000)
    path.parent.mkdir(parents=True, exist_ok=True)
    frame.write_csv(path)
    return frame.height + 1


def test_port_counter_file_of_2m_lines_peaks_under_1_5_gb(tmp_path):
    src = tmp_path / "src"
    n = write_port_counters(src / "network" / "ib-port-counters.csv", hosts=2000, days=84)
    assert n > 2_000_000
    assert '"node_infiniband_symbol_error_total{device=""mlx5_0"",port=""1""}"' in (
        src / "network" / "ib-port-counters.csv").read_text()[:300]
    # Through a small intermediate process: Linux keeps the high-water RSS of the memory a process had before
    # exec (with vfork, its parent's: this pytest worker's), and getrusage reports it as the child's own peak.
    child = [sys.executable, "-c", CHILD, str(src), str(tmp_path / "w.duckdb")]
    run = subprocess.run([sys.executable, "-c", FRESH, *child], cwd=REPO, capture_output=True, text=True, timeout=600,
                         env={**os.environ, "PYTHONPATH": str(REPO), "GOODPUT_TORCH_THREADS": "1"})
    assert run.returncode == 0, run.stderr[-2000:]
    out = json.loads(run.stdout.splitlines()[-1])
    assert (out["status"], out["lines"], out["rows"], out["stored"]) == ("ok", n, n - 1, n - 1)
    assert out["peak_bytes"] < 1.5e9, f"peak RSS {out['peak_bytes'] / 1e9:.2f} GB"


def _telemetry_csv(path: Path, lines: int, value: int = 1) -> None:
    rows = [f"2024-03-01T{i // 3600 % 24:02d}:{i // 60 % 60:02d}:{i % 60:02d}Z,gpu{i % 7:03d},{i % 8},"
            f"DCGM_FI_DEV_GPU_TEMP,{value}" for i in range(lines)]
    rows[5] = "2024-03-01T00:00:05Z,gpu001,0,DCGM_FI_DEV_GPU_TEMP,hot"  # a reject in the first part
    path.write_text("time,host,gpu,metric,value\n" + "\n".join(rows) + "\n")


def _table(con, name: str) -> pl.DataFrame:
    return con.sql(f"SELECT * EXCLUDE (file) FROM {name} ORDER BY line_no").pl()


def test_large_file_is_written_part_by_part_as_it_would_be_whole(tmp_path, monkeypatch):
    src = tmp_path / "src"
    (src / "telemetry").mkdir(parents=True)
    _telemetry_csv(src / "telemetry" / "dcgm.csv", 3000)
    whole = warehouse.connect(tmp_path / "whole.duckdb")
    assert ingest_directory(whole, src).outcomes[0].status == "ok"
    parts, written = warehouse.connect(tmp_path / "parts.duckdb"), []
    monkeypatch.setattr(ingest, "PIECE_BYTES", 4096)
    monkeypatch.setattr(ingest, "SPILL_BYTES", 0)  # every part goes to the warehouse as it comes
    real = warehouse.FileWriter.write
    monkeypatch.setattr(warehouse.FileWriter, "write", lambda self, t, r: written.append(1) or real(self, t, r))
    out = ingest_directory(parts, src).outcomes[0]
    assert len(written) > 10 and (out.status, out.lines, out.rows, out.rejects) == ("ok", 3001, 2999, 1)
    for name in ("telemetry", "rejects"):
        assert_frame_equal(_table(parts, name), _table(whole, name))
    files = "SELECT lines, row_lines, rows, rejects, skipped, status FROM ingested_files"
    assert parts.execute(files).fetchall() == whole.execute(files).fetchall()
    assert [o.status for o in ingest_directory(parts, src).outcomes] == ["unchanged"]


def test_crash_part_way_through_a_large_file_leaves_it_as_it_was(tmp_path, monkeypatch):
    src = tmp_path / "src"
    (src / "telemetry").mkdir(parents=True)
    path = src / "telemetry" / "dcgm.csv"
    _telemetry_csv(path, 3000, value=1)
    con = warehouse.connect(tmp_path / "w.duckdb")
    ingest_directory(con, src)
    before = _table(con, "telemetry")
    _telemetry_csv(path, 3000, value=2)
    monkeypatch.setattr(ingest, "PIECE_BYTES", 4096)
    monkeypatch.setattr(ingest, "SPILL_BYTES", 0)
    real, calls = telemetry._csv_rows, []

    def crash(*args):  # the power goes while the fourth part is parsed: three were written
        calls.append(1)
        if len(calls) == 4:
            raise KeyboardInterrupt
        return real(*args)

    monkeypatch.setattr(telemetry, "_csv_rows", crash)
    with pytest.raises(KeyboardInterrupt):
        ingest_directory(con, src)
    assert_frame_equal(_table(con, "telemetry"), before)
    monkeypatch.setattr(telemetry, "_csv_rows", real)
    out = ingest_directory(con, src).outcomes[0]
    assert out.status == "ok" and con.execute("SELECT min(value), max(value) FROM telemetry").fetchall() == [(2, 2)]


def _pieces_like_whole(parse, stream_parts, path: Path, source: str, hint: str | None = None,
                       options: IngestOptions | None = None, chunk: int = 300) -> int:
    """Parse ``path`` whole and in pieces of about ``chunk`` bytes: the same rows, rejects and counts."""
    def ctx():
        return ParseContext(path=path, source=source, host_hint=hint, options=options or IngestOptions())
    whole = parse(read_lines(path).lines, ctx())
    pieces = list(stream_parts(LineStream(path, chunk_bytes=chunk).frames(), ctx()))
    parts = combine(pieces)
    assert set(parts.tables) == set(whole.tables)
    for name, rows in whole.tables.items():
        if rows.height or parts.tables[name].height:
            assert_frame_equal(parts.tables[name].sort("line_no", maintain_order=True),
                               rows.sort("line_no", maintain_order=True), check_dtypes=False)
    order = ["line_no", "reason", "raw"]
    assert_frame_equal(parts.rejects.sort(order), whole.rejects.sort(order))
    assert (parts.skipped, parts.merged) == (whole.skipped, whole.merged)
    return len(pieces)


def test_sacct_in_pieces_keeps_split_rows_and_headers(tmp_path):
    path = tmp_path / "sacct.txt"
    rows = []
    for i in range(40):
        rows.append(row(str(1000 + i), name="a|b" if i == 7 else "train"))
        if i % 9 == 3:  # a SubmitLine with a newline: continuation lines without a delimiter
            rows[-1] = row(str(1000 + i), submit_line="sbatch \\")
            rows.append("  --wrap 'python x.py'")
        if i == 25:
            rows += ["JobID|Start|State|End", "500|2024-03-01T11:05:00|COMPLETED|2024-03-01T12:00:00", HEADER]
    rows.append("sacct: error: slurmdbd: Getting response to message type 1444")
    path.write_text(HEADER + "\n" + "\n".join(rows) + "\n")
    assert _pieces_like_whole(sacct.parse, sacct.stream_parts, path, "slurm") > 5


def test_sacct_dataset_multiline_rows_in_pieces(datasets):
    for name in ("sample-sacct-multiple-multiline.txt", "sample-sacct-output-midnight-edge-case.txt"):
        path = datasets / "gcm-slurm-fixtures" / name
        assert _pieces_like_whole(sacct.parse, sacct.stream_parts, path, "slurm", chunk=500) > 1


def test_kernel_in_pieces_keeps_continuations_and_the_year(tmp_path):
    path = tmp_path / "kern.log"
    lines = []
    for day in range(20, 32):  # RFC 3164: no year; Dec -> Jan starts the next one
        lines += [f"Dec {day} 10:00:0{k} gpu001 kernel: NVRM: Xid (PCI:0000:3b:00): 79, pid=1, GPU has fallen off"
                  for k in range(3)]
    lines += [f"Jan  {day} 10:00:00 gpu001 kernel: mlx5_core 0000:0c:00.0: port 1 link down" for day in range(1, 9)]
    lines += ["[Mon Mar  4 06:00:01 2024] BUG: soft lockup - CPU#3 stuck for 22s!",
              "  Modules linked in: nvidia", "  CPU: 3 PID: 1 Comm: x", "orphan line without a header"]
    path.write_text("\n".join(lines) + "\n")
    os.utime(path, (datetime(2025, 1, 10).timestamp(),) * 2)
    assert _pieces_like_whole(kernel.parse, kernel.stream_parts, path, "kernel", hint="gpu001") > 5
    events = kernel.parse(read_lines(path).lines, ParseContext(path=path, source="kernel", host_hint="gpu001"))
    years = events.tables["node_events"]["event_time"].dt.year().to_list()
    assert years[0] == 2024 and years[36] == 2025


@pytest.mark.parametrize("parse,stream_parts,name,source", [
    (sacct.parse, sacct.stream_parts, "slurm/sacct-2024-03-01.txt", "slurm"),
    (kernel.parse, kernel.stream_parts, "kernel/gpu001.dmesg", "kernel"),
    (kernel.parse, kernel.stream_parts, "kernel/gpu003.log", "kernel"),
    (switch.parse, switch.stream_parts, "switch/leaf01.log", "switch"),
    (health.parse, health.stream_parts, "health/health-2024-03-01.jsonl", "health"),
    (slurm_events.parse, slurm_events.stream_parts, "slurm_events/events-2024-03-01.txt", "slurm_events"),
    (telemetry.parse, telemetry.stream_parts, "telemetry/dcgm-2024-03-01.csv", "telemetry"),
])
def test_demo_logs_read_in_pieces_as_whole(parse, stream_parts, name, source):
    path = DEMO / name
    hint = "gpu001" if source == "kernel" else None
    assert _pieces_like_whole(parse, stream_parts, path, source, hint=hint, options=IngestOptions(syslog_year=2024),
                              chunk=max(64, path.stat().st_size // 6)) > 1


def test_rerun_over_unchanged_files_asks_the_warehouse_once(tmp_path, monkeypatch):
    src = tmp_path / "src"
    (src / "kernel").mkdir(parents=True)
    for i in range(30):
        (src / "kernel" / f"gpu{i:03d}.log").write_text(
            "2024-03-01T10:00:00+00:00 gpu001 kernel: NVRM: Xid (PCI:0000:3b:00): 79, pid=1, GPU has fallen off\n")
    past = datetime(2024, 3, 2).timestamp()  # older than the reading by more than the racy-clean second
    for f in (src / "kernel").iterdir():
        os.utime(f, (past, past))
    con = warehouse.connect(tmp_path / "w.duckdb")
    assert {o.status for o in ingest_directory(con, src).outcomes} == {"ok"}
    asked = []
    real = sql.query
    monkeypatch.setattr(sql, "query", lambda c, name, params=None: asked.append(name) or real(c, name, params))
    again = ingest_directory(con, src)
    assert {o.status for o in again.outcomes} == {"unchanged"} and len(again.outcomes) == 30
    assert "ingest/file_by_path" not in asked
    (src / "kernel" / "gpu007.log").write_text("2024-03-01T11:00:00+00:00 gpu007 kernel: NVRM: Xid 48\n")
    changed = [o for o in ingest_directory(con, src).outcomes if o.status != "unchanged"]
    assert [(Path(o.path).name, o.status) for o in changed] == [("gpu007.log", "ok")]
