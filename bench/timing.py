"""What the bench scripts print for each step: its wall time, its CPU time (all the process's threads:
the cost on a shared machine) and the process's peak RSS so far."""
from __future__ import annotations

import resource
import time


def peak_mb() -> float:
    """The process's peak resident set size (MB; Linux reports ru_maxrss in KB)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def timed(label: str, fn):
    """Run ``fn``, print its wall and CPU time and the peak RSS, return what it returned."""
    t0, c0 = time.perf_counter(), time.process_time()
    out = fn()
    print(f"{label:34} {time.perf_counter() - t0:7.2f} s  {time.process_time() - c0:7.2f} CPU-s   "
          f"peak RSS {peak_mb():7,.0f} MB", flush=True)
    return out


def cpu(fn) -> tuple[object, float]:
    """``fn``'s result and the CPU seconds it took."""
    c0 = time.process_time()
    out = fn()
    return out, time.process_time() - c0
