"""Seeded fuzzing of every parser: mutated lines never raise, and every line is
accounted for (stored + rejected + skipped + merged = lines read).

Each case keeps a file's first line (the header, or the line the parser detects
the format from) and mutates a few thousand body lines built from the demo source's real-shaped
lines: truncation, stray quotes and delimiters, control bytes, invalid UTF-8,
huge numbers, deep nesting, duplicated and shuffled lines. The same files are
also written with lone-CR line ends and with an over-long last line that has no
newline; and a source tree full of symbolic links out of it is ingested without
reading a byte through them.
"""
from __future__ import annotations

import random
from pathlib import Path

import pytest

from analysis import warehouse
from analysis.ingest.accounting import account
from analysis.ingest.contract import IngestOptions, ParseContext, UnrecognisedFormat
from analysis.ingest.engine import ingest_directory
from analysis.ingest.one_file import parser_for
from analysis.ingest.lines import read_lines
from analysis.package_files import demo_source
from tests.conftest import FIXTURES

DEMO = demo_source()
LINES_PER_FILE = 3000

CASES = {  # source folder -> demo file whose lines seed the mutations, file name to write
    "slurm": ("slurm/sacct-2024-03-01.txt", "sacct.txt"),
    "slurm_events": ("slurm_events/events-2024-03-01.txt", "events.txt"),
    "kernel_dmesg": ("kernel/gpu001.dmesg", "gpu001.dmesg"),
    "kernel_iso": ("kernel/gpu003.log", "gpu003.log"),
    "kernel_3164": ("kernel/gpu007.log", "gpu007.log"),
    "switch": ("switch/leaf01.log", "leaf01.log"),
    "health": ("health/health-2024-03-01.jsonl", "health.jsonl"),
    "benchmarks_jsonl": ("benchmarks/results-summary.jsonl", "results.jsonl"),
    "benchmarks_nccl": ("benchmarks/gpu006/all_reduce_perf.log", "all_reduce_perf.log"),
    "telemetry": ("telemetry/dcgm-2024-03-01.csv", "dcgm.csv"),
    "tickets": ("tickets/tickets.csv", "tickets.csv"),
    "topology": ("topology/cabling.csv", "cabling.csv"),
    "joblogs": (FIXTURES / "joblogs" / "slurm-7001.out", "slurm-7001.out"),  # not in the demo (DEMO / an absolute path is that path)
    # every shape node_health/ reads (NVSentinel flat and CloudEvents, gpud, Kubernetes Events), not in the demo
    "node_health": (FIXTURES / "node_health" / "mixed_shapes.jsonl", "gpu-node-07.jsonl"),
    "kubernetes": (FIXTURES / "kubernetes" / "watch.jsonl", "watch.jsonl"),  # watch events, Jobs, broken lines
}
HEADERED = {"slurm", "slurm_events", "telemetry", "tickets", "topology"}
NOISE = ['"', "'", "|", ",", "\t", "\\", "{", "}", "[", "]", ":", "\r", "\x00", "\x1f", "\ufffd", "é", " ", "=", "#"]


def _mutate(rng: random.Random, line: str) -> str:
    kind = rng.randrange(12)
    if kind == 0 and line:
        return line[: rng.randrange(len(line))]  # truncated
    if kind == 1:
        i = rng.randrange(len(line) + 1)
        return line[:i] + rng.choice(NOISE) * rng.randint(1, 3) + line[i:]
    if kind == 2:
        return "".join(c if rng.random() > 0.05 else rng.choice(NOISE) for c in line)
    if kind == 3:
        return line.replace(rng.choice("0123456789"), "9" * rng.choice([20, 400]), 1)  # huge numbers
    if kind == 4:
        depth = rng.choice([3, 100, 5000])
        return rng.choice(["[" * depth + "]" * depth, '{"a":' * depth + "1" + "}" * depth, "[" * depth])
    if kind == 5:
        return ""
    if kind == 6:
        return line + line  # two records glued together
    if kind == 7:
        return rng.choice(["-", "NaN", "inf", "-1", "null", "None", "Unknown", "#", "# comment", "    "])
    if kind == 8 and line:
        cut = rng.randrange(len(line))
        return line[cut:]  # the tail of a line
    if kind == 9:
        return line.replace(" ", "  ").replace(":", "")
    return line


def _write_case(tmp_path: Path, case: str, seed: int, eol: str = "\n", tail: bytes = b"") -> tuple[Path, str]:
    """The mutated file, lines ended by ``eol``, then ``tail`` (a last line without line end)."""
    rel, name = CASES[case]
    seed_lines = (DEMO / rel).read_text().splitlines()
    header, body = seed_lines[:1], seed_lines[1:] if case in HEADERED else seed_lines
    rng = random.Random(f"{case}-{seed}")
    lines = header + [_mutate(rng, rng.choice(body)) for _ in range(LINES_PER_FILE)]
    folder = case.split("_")[0] if case.startswith(("kernel", "benchmarks")) else case
    sub = tmp_path / folder / ("gpu006" if case == "benchmarks_nccl" else "")
    sub.mkdir(parents=True, exist_ok=True)
    path = sub / name
    data = eol.join(lines).encode("utf-8", errors="surrogateescape")
    if rng.random() < 0.5:
        data = data.replace("\ufffd".encode(), b"\xff\xfe")  # invalid UTF-8 as well
    path.write_bytes(data + eol.encode() + tail)
    return path, folder


def _parse_case(case: str, path: Path, folder: str):
    lines = read_lines(path)
    host = "gpu006" if folder == "benchmarks" else (path.name.split(".")[0] if folder == "kernel" else None)
    ctx = ParseContext(path=path, source=folder, host_hint=host,
                       options=IngestOptions(syslog_year=2024))
    try:
        result = parser_for(folder).parse(lines.lines, ctx)
    except UnrecognisedFormat:
        pytest.fail(f"{case}: a file with a valid first line was refused as a whole")
    counts = account(result, lines)  # raises AccountingError when a line is lost or double-counted
    assert counts.row_lines > 0, f"{case}: no line survived; the mutations leave most lines intact"
    reasons = result.rejects["reason"].to_list()
    assert all(r and "Traceback" not in r and "polars" not in r.lower() for r in reasons)
    return lines, result, counts


@pytest.mark.parametrize("seed", [1, 2])
@pytest.mark.parametrize("case", sorted(CASES))
def test_mutated_lines_are_all_accounted_for(tmp_path, case, seed):
    path, folder = _write_case(tmp_path, case, seed)
    _, _, counts = _parse_case(case, path, folder)
    assert counts.lines == LINES_PER_FILE + 1


@pytest.mark.parametrize("case", sorted(CASES))
def test_unterminated_over_long_last_line_is_a_reject_and_the_rest_parses(tmp_path, case):
    # used to vanish (a file of only that line: ok, 0 lines) or to fail the whole file's accounting
    tail = ("".join(random.Random(case).choice("ab, |:\"\t\r") for _ in range(64)) * 5000).encode()
    path, folder = _write_case(tmp_path, case, 3, tail=tail)
    lines, result, counts = _parse_case(case, path, folder)
    assert counts.lines == LINES_PER_FILE + 2
    last = lines.rejects.filter(lines.rejects["line_no"] == LINES_PER_FILE + 2)
    assert last.height == 1 and "exceeds the 262,144-byte limit" in last["reason"][0]


@pytest.mark.parametrize("case", sorted(CASES))
def test_files_with_lone_cr_line_ends_are_read_line_by_line(tmp_path, case):
    # classic Mac OS line ends: the whole file used to be one line (kept, or over-long and rejected)
    path, folder = _write_case(tmp_path, case, 4, eol="\r")
    lines, result, counts = _parse_case(case, path, folder)
    assert counts.lines == path.read_bytes().count(b"\r")  # a CR the mutations inserted ends a line too
    assert lines.rejects.height == 0 and any("lone CRs" in p for p in lines.problems)


def test_links_out_of_the_tree_are_never_read(tmp_path):
    outside = tmp_path / "outside"
    outside.mkdir()
    secret = outside / "secret.log"
    demo_kernel = (DEMO / "kernel" / "gpu003.log").read_text().splitlines()
    secret.write_text("\n".join(f"{line} SECRET-{i}" for i, line in enumerate(demo_kernel)) + "\n")
    src = tmp_path / "src"
    rng = random.Random("links")
    kinds = {"absolute": lambda p: secret, "relative": lambda p: Path("../" * (len(p.parts) - 1)) / ".." / "outside" / "secret.log",
             "folder": lambda p: outside, "loop": lambda p: p.name, "dangling": lambda p: outside / "gone.log"}
    links = []
    for folder in sorted({c.split("_")[0] if c.startswith(("kernel", "benchmarks")) else c for c in CASES}):
        for kind in rng.sample(sorted(kinds), 3):
            rel = Path(folder, *(["gpu001"] if rng.random() < 0.5 else []), f"gpu{rng.randrange(100):03d}-{kind}.log")
            (src / rel).parent.mkdir(parents=True, exist_ok=True)
            (src / rel).symlink_to(kinds[kind](rel))
            links.append(rel)
    (src / "kernel" / "gpu003.log").write_text("\n".join(demo_kernel) + "\n")  # an ordinary file beside them
    con = warehouse.connect(tmp_path / "w.duckdb")
    try:
        outcomes = {o.path: o for o in ingest_directory(con, src, IngestOptions(syslog_year=2024)).outcomes}
        stored = con.execute("SELECT count(*) FROM rejects WHERE raw LIKE '%SECRET%'").fetchall()[0][0]
        events = con.execute("SELECT count(*) FROM node_events WHERE message LIKE '%SECRET%'").fetchall()[0][0]
        good = con.execute("SELECT count(*) FROM node_events").fetchall()[0][0]
    finally:
        con.close()
    assert stored == 0 and events == 0 and good > 0
    for rel in links:
        o = outcomes[str((src / rel).parent.resolve() / rel.name)]
        assert o.status == "unrecognised" and "nothing read" in o.message, (rel, o)
