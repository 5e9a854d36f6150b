"""Thread bounds for a shared machine.

goodput's models are small (a Cox-Time net of two layers, an LSTM-VAE per metric over a 10-sample window,
k-means and a random forest on a few thousand rows): more threads barely speed them up, and the thread
pools of torch (OpenMP) and of the BLAS libraries busy-wait between parallel regions. Beside another
process on the same cores those waits spin against it: measured here, the demo's telemetry step went from
about 2 CPU-minutes alone to more than 20 minutes beside one busy process with 2 torch threads. So every
model runs on $GOODPUT_TORCH_THREADS threads (default 1), and the native pools are capped at the same.
DuckDB and polars keep their own pools: they do not spin while waiting (bench/contention.py measures it).
"""
from __future__ import annotations

import os

ENV = "GOODPUT_TORCH_THREADS"
DEFAULT = 1


def model_threads() -> int:
    """$GOODPUT_TORCH_THREADS (a positive integer), else 1."""
    value = os.environ.get(ENV, "").strip()
    return max(1, int(value)) if value.isdigit() else DEFAULT


def bound_native_threads() -> None:
    """Cap the OpenMP and BLAS pools already loaded (numpy, scikit-learn, torch) and those loaded later
    (through the environment they read when they start). Idempotent; called where a process starts work."""
    n = str(model_threads())
    for name in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ.setdefault(name, n)
    from threadpoolctl import threadpool_limits

    threadpool_limits(limits=int(n))


def bound_torch() -> None:
    """torch on model_threads() threads (intra-op) and one inter-op thread; call before training or scoring."""
    import torch

    torch.set_num_threads(model_threads())
    try:
        torch.set_num_interop_threads(1)
    except RuntimeError:  # only settable before the first parallel work of the process: already set then
        pass
