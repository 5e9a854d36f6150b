"""Sum GOODPUT_TEST_CPU's per-test CPU seconds per module, costliest first: `python -m tests.cpu_times FILE`."""
from __future__ import annotations

import sys
from collections import defaultdict


def per_module(lines: list[str]) -> list[tuple[str, float, int]]:
    seconds, tests = defaultdict(float), defaultdict(int)
    for line in lines:
        nodeid, _, cpu = line.rstrip("\n").rpartition("\t")
        module = nodeid.split("::", 1)[0]
        seconds[module] += float(cpu)
        tests[module] += 1
    return sorted(((m, s, tests[m]) for m, s in seconds.items()), key=lambda r: -r[1])


if __name__ == "__main__":
    rows = per_module(open(sys.argv[1]).readlines())
    print(f"{sum(s for _, s, _ in rows):8.1f} CPU s in {sum(n for *_, n in rows)} tests")
    for module, s, n in rows[:int(sys.argv[2]) if len(sys.argv) > 2 else 40]:
        print(f"{s:8.1f}  {n:4}  {module}")
