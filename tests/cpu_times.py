"""Sum GOODPUT_TEST_CPU's per-test CPU seconds per module, costliest first, and each worker's busy time:
`python -m tests.cpu_times FILE [N]`."""
from __future__ import annotations

import sys
from collections import defaultdict


def _fields(line: str) -> list[str]:
    return line.rstrip("\n").split("\t")


def per_module(lines: list[str]) -> list[tuple[str, float, int]]:
    seconds, tests = defaultdict(float), defaultdict(int)
    for line in lines:
        nodeid, cpu = _fields(line)[:2]
        module = nodeid.split("::", 1)[0]
        seconds[module] += float(cpu)
        tests[module] += 1
    return sorted(((m, s, tests[m]) for m, s in seconds.items()), key=lambda r: -r[1])


def per_worker(lines: list[str]) -> list[tuple[str, float, float, float]]:
    """Each worker's CPU seconds, busy wall seconds (its tests' spans summed) and the wall second (from the
    first test's start on any worker) its last test ended: the gap between the workers' ends is time one core
    sat idle at the end of the run."""
    rows = [f for f in map(_fields, lines) if len(f) >= 5]
    if not rows:
        return []
    t0 = min(float(f[3]) for f in rows)
    cpu, busy, end = defaultdict(float), defaultdict(float), defaultdict(float)
    for _, c, worker, began, ended, *_ in rows:
        cpu[worker] += float(c)
        busy[worker] += float(ended) - float(began)
        end[worker] = max(end[worker], float(ended) - t0)
    return [(w, cpu[w], busy[w], end[w]) for w in sorted(cpu)]


if __name__ == "__main__":
    lines = open(sys.argv[1]).readlines()
    rows = per_module(lines)
    print(f"{sum(s for _, s, _ in rows):8.1f} CPU s in {sum(n for *_, n in rows)} tests")
    for worker, cpu, busy, end in per_worker(lines):
        print(f"{worker:>8}: {cpu:7.1f} CPU s, {busy:7.1f} s busy, last test ended at {end:7.1f} s")
    for module, s, n in rows[:int(sys.argv[2]) if len(sys.argv) > 2 else 40]:
        print(f"{s:8.1f}  {n:4}  {module}")
