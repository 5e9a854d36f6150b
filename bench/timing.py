"""What the bench scripts print for each step: its wall time and the process's peak RSS so far."""
from __future__ import annotations

import resource
import time


def peak_mb() -> float:
    """The process's peak resident set size (MB; Linux reports ru_maxrss in KB)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def timed(label: str, fn):
    """Run ``fn``, print its time and the peak RSS, return what it returned."""
    t0 = time.perf_counter()
    out = fn()
    print(f"{label:34} {time.perf_counter() - t0:7.2f} s   peak RSS {peak_mb():7,.0f} MB", flush=True)
    return out
