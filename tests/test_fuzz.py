"""Seeded fuzzing of every parser: mutated lines never raise, and every line is
accounted for (stored + rejected + skipped + merged = lines read).

Each case keeps a file's first line (the header, or the line the parser detects
the format from) and mutates a few thousand body lines built from the demo source's real-shaped
lines: truncation, stray quotes and delimiters, control bytes, invalid UTF-8,
huge numbers, deep nesting, duplicated and shuffled lines.
"""
from __future__ import annotations

import random
from pathlib import Path

import pytest

from analysis.accounting import account
from analysis.ingest import parser_for
from analysis.lines import read_lines
from analysis.model import IngestOptions, ParseContext, UnrecognisedFormat

DEMO = Path(__file__).resolve().parent / "fixtures" / "demo_source"
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


def _write_case(tmp_path: Path, case: str, seed: int) -> tuple[Path, str]:
    rel, name = CASES[case]
    seed_lines = (DEMO / rel).read_text().splitlines()
    header, body = seed_lines[:1], seed_lines[1:] if case in HEADERED else seed_lines
    rng = random.Random(f"{case}-{seed}")
    lines = header + [_mutate(rng, rng.choice(body)) for _ in range(LINES_PER_FILE)]
    folder = case.split("_")[0] if case.startswith(("kernel", "benchmarks")) else case
    sub = tmp_path / folder / ("gpu006" if case == "benchmarks_nccl" else "")
    sub.mkdir(parents=True, exist_ok=True)
    path = sub / name
    data = "\n".join(lines).encode("utf-8", errors="surrogateescape")
    if rng.random() < 0.5:
        data = data.replace("\ufffd".encode(), b"\xff\xfe")  # invalid UTF-8 as well
    path.write_bytes(data + b"\n")
    return path, folder


@pytest.mark.parametrize("seed", [1, 2])
@pytest.mark.parametrize("case", sorted(CASES))
def test_mutated_lines_are_all_accounted_for(tmp_path, case, seed):
    path, folder = _write_case(tmp_path, case, seed)
    lines = read_lines(path)
    host = "gpu006" if folder == "benchmarks" else (path.name.split(".")[0] if folder == "kernel" else None)
    ctx = ParseContext(path=path, source=folder, host_hint=host,
                       options=IngestOptions(syslog_year=2024))
    try:
        result = parser_for(folder).parse(lines.lines, ctx)
    except UnrecognisedFormat:
        pytest.fail(f"{case}: a file with a valid first line was refused as a whole")
    counts = account(result, lines)  # raises AccountingError when a line is lost or double-counted
    assert counts.lines == LINES_PER_FILE + 1
    assert counts.row_lines > 0, f"{case}: no line survived; the mutations leave most lines intact"
    reasons = result.rejects["reason"].to_list()
    assert all(r and "Traceback" not in r and "polars" not in r.lower() for r in reasons)
