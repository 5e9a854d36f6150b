"""Small files of one source parsed as one batch (analysis.ingest.batch) give exactly the tables, rejects
and ingested_files records that reading them one by one gives, odd files included."""
from __future__ import annotations

import gzip
import shutil
from pathlib import Path

import polars as pl
import pytest

from analysis import sources, warehouse
from analysis.ingest import batch as ingest_batch
from analysis.ingest import one_file as ingest
from analysis.ingest.engine import discover, ingest_directory
from analysis.ingest.parsers import kernel
from analysis.package_files import demo_source
from analysis.simulate.config import preset
from analysis.simulate.run import simulate
from analysis.sources import SOURCES
from tests.test_sacct_parser import HEADER, row

FIXTURES = Path(__file__).parent / "fixtures"
TIMES = ("ingested_at", "verified_at", "mtime_ns")


def _source(root: Path) -> Path:
    """A simulated cluster plus real-format fixtures and the odd files a batch must leave to the file-by-file
    path (or read the same way): no header, a copy, an over-long line, NUL bytes, no final newline, empty."""
    src = root / "src"
    simulate(preset("rsc1", nodes=16, days=3, seed=2, telemetry_jobs=0), src)
    shutil.rmtree(src / "truth")
    demo = demo_source()
    for name in ("gpu001.dmesg", "gpu003.log", "gpu007.log"):
        shutil.copy(demo / "kernel" / name, src / "kernel" / name)
    for path in (FIXTURES / "switch").glob("*.log"):
        shutil.copy(path, src / "switch" / path.name)
    for path in (FIXTURES / "joblogs").rglob("*"):
        if path.is_file() and path.suffix in (".out", ".err", ".log"):
            shutil.copy(path, src / "joblogs" / path.name)
    (src / "benchmarks" / "gpu006").mkdir()
    shutil.copy(demo / "benchmarks/gpu006/all_reduce_perf.log", src / "benchmarks/gpu006/all_reduce_perf.log")
    shutil.copy(FIXTURES / "nccl/all_gather_perf_2.18.log", src / "benchmarks/gpu006/all_gather_perf.log")
    shutil.copy(demo / "health/health-2024-03-01.jsonl", src / "health/gpu009.jsonl")
    kern = src / "kernel"
    (kern / "gpu010.log").write_text("no header at all\nstill none\n")  # unrecognised
    shutil.copy(kern / "gpu003.log", kern / "gpu003.log.1")  # a duplicate of a file in the same batch
    (kern / "gpu011.log").write_text("[Mon Mar  4 10:00:00 2024] x" + "y" * 300_000 + "\n[Mon Mar  4 10:00:01 2024] ok\n")
    (kern / "gpu012.log").write_bytes(b"\x00\x00[Mon Mar  4 10:00:00 2024] NVRM: Xid (PCI:0000:3b:00): 79, pid=1\n")
    (kern / "gpu013.log").write_text("[Mon Mar  4 10:00:00 2024] no newline at the end\n  continued")
    (kern / "gpu014.log").write_text("")
    with gzip.open(kern / "gpu015.log.gz", "wt") as f:
        f.write("[Mon Mar  4 10:00:00 2024] NVRM: Xid (PCI:0000:3b:00): 48, pid=1\n\n\n")
    (src / "health" / "gpu016.log").write_text(
        "Mar  4 10:23:45 gpu016 nhc[1234]: Health check failed:  check_hw_ib:  No IB port is ACTIVE\n"
        "ERROR:  nhc:  Health check failed:  check_hw_ib:  No IB port is ACTIVE\n")
    (src / "health" / "gpu017.jsonl").write_text('{"time": 5}\nnot json\n')
    slurm = src / "slurm"
    # a '|' in a job name, a newline in a submit line, a repeated header; no header; another delimiter
    (slurm / "sacct-extra.txt").write_text("\n".join([HEADER, row("77", name="a|b"), row("78", submit_line='sbatch --wrap="a'),
                                                      'b"', HEADER, row("79"), row("80", nodes="gpu[1-x]")]) + "\n")
    (slurm / "sacct-noheader.txt").write_text(row("81") + "\n" + row("82", state="RUNNING") + "\n")
    (slurm / "sacct-tab.txt").write_text(HEADER.replace("|", "\t") + "\n" + row("83", delim="\t") + "\n")
    return src


def _tables(src: Path, db: Path) -> dict[str, pl.DataFrame]:
    con = warehouse.connect(db)
    ingest_directory(con, src)
    out = {}
    for table in (*sources.raw_tables(), "rejects", "ingested_files"):
        frame = con.sql(f"SELECT * FROM {table}").pl()
        frame = frame.drop([c for c in TIMES if c in frame.columns])
        out[table] = frame.sort(frame.columns, nulls_last=True)
    con.close()
    return out


def test_batched_ingest_equals_file_by_file(tmp_path, monkeypatch):
    src = _source(tmp_path)
    sizes = []
    parse_batch = ingest_batch._parse_batch
    monkeypatch.setattr(ingest_batch, "_parse_batch", lambda con, pendings, shas: sizes.append(len(pendings))
                        or parse_batch(con, pendings, shas))
    batched = _tables(src, tmp_path / "batched.duckdb")
    assert max(sizes) >= 10  # the simulated joblogs, at least, went as one batch
    monkeypatch.setattr(ingest_batch, "GROUP_FILES", 1)
    alone = _tables(src, tmp_path / "alone.duckdb")
    for table, frame in batched.items():
        assert frame.equals(alone[table]), table
    files = batched["ingested_files"]
    status = dict(zip(files["path"].str.extract(r"/([^/]+/[^/]+)$"), files["status"]))
    assert status["kernel/gpu010.log"] == "unrecognised" and status["kernel/gpu003.log.1"] == "duplicate"
    assert status["kernel/gpu011.log"] == status["kernel/gpu012.log"] == status["kernel/gpu015.log.gz"] == "ok"
    assert batched["job_log_lines"].height and batched["sacct_records"].height


def test_a_file_the_batch_does_not_account_for_is_read_alone(tmp_path, monkeypatch):
    src = tmp_path / "src"
    (src / "kernel").mkdir(parents=True)
    for i in range(4):
        (src / "kernel" / f"gpu00{i}.log").write_text(f"[Mon Mar  4 10:00:0{i} 2024] NVRM: Xid (PCI:0000:3b:00): 79, pid=1\n\n")
    parse_batch = kernel.parse_batch

    def losing_a_line(lines, ctxs):  # a batch result that loses file 2's blank line
        result = parse_batch(lines, ctxs)
        result.skipped[2] = 0
        return result

    monkeypatch.setattr(kernel, "parse_batch", losing_a_line)
    con = warehouse.connect(tmp_path / "w.duckdb")
    outcomes = ingest_directory(con, src).outcomes
    assert [o.status for o in outcomes] == ["ok"] * 4 and all(o.lines == 2 and o.rows == 1 for o in outcomes)
    files = con.sql("SELECT skipped, row_lines FROM ingested_files ORDER BY path").fetchall()
    assert files == [(1, 1)] * 4
    assert con.sql("SELECT count(*), count(DISTINCT file) FROM node_events").fetchall() == [(4, 4)]


@pytest.mark.parametrize("sizes, expected", [((10, 10, 10), [3]), ((10, 10**9, 10), [1, 1, 1])])
def test_groups_keep_large_files_alone(tmp_path, sizes, expected):
    (tmp_path / "kernel").mkdir()
    files = []
    for i, size in enumerate(sizes):
        path = tmp_path / "kernel" / f"gpu{i}.log"
        with open(path, "wb") as f:
            f.truncate(size)
        files.append((path, "kernel"))
    assert [len(g) for g in ingest_batch.groups(files)] == expected


def test_small_files_go_as_a_batch_and_a_large_one_alone_in_pieces(tmp_path, monkeypatch):
    src = tmp_path / "src"
    (src / "kernel").mkdir(parents=True)
    line = "2024-03-01T10:00:00+00:00 {} kernel: NVRM: Xid (PCI:0000:3b:00): 79, pid=1, GPU has fallen off\n"
    for i in range(3):
        (src / "kernel" / f"gpu{i:03d}.log").write_text(line.format(f"gpu{i:03d}") * 5)
    (src / "kernel" / "big.log").write_text(line.format("gpu009") * 2000)
    monkeypatch.setattr(ingest_batch, "SMALL_FILE", 10_000)
    monkeypatch.setattr(ingest, "PIECE_BYTES", 4096)
    calls = []
    real = kernel.parse_batch
    monkeypatch.setattr(kernel, "parse_batch", lambda lines, ctxs: calls.append(len(ctxs)) or real(lines, ctxs))
    out = {Path(o.path).name: o for o in ingest_directory(warehouse.connect(tmp_path / "w.duckdb"), src).outcomes}
    assert {n: (o.status, o.rows) for n, o in out.items()} == {
        "big.log": ("ok", 2000), "gpu000.log": ("ok", 5), "gpu001.log": ("ok", 5), "gpu002.log": ("ok", 5)}
    assert calls.count(3) == 1  # the three small files: one batch
    assert calls.count(1) > 20  # the large file: piece by piece, each a batch of one


def test_discover_of_some_sources_lists_what_the_whole_tree_lists_of_them(tmp_path):
    src = tmp_path / "src"
    for rel in ("kernel/gpu1.log", "kernel/gpu2/dmesg.log", "switch/leaf.log", "mystery/notes.txt", "top.txt",
                "kernel/.hidden.log", "joblogs/slurm-1.out"):
        (src / rel).parent.mkdir(parents=True, exist_ok=True)
        (src / rel).write_text("x\n")
    (src / "joblogs" / "slurm-2.out").symlink_to(src / "kernel" / "gpu1.log")  # a link into another folder
    every = discover(src)
    for sources in (["kernel"], ["switch", "kernel"], [None], ["joblogs"], [None, "kernel"], list(SOURCES)):
        assert discover(src, sources) == [(p, s) for p, s in every if s in sources], sources
