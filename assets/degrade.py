"""Degrade, don't die: a step that reads one optional feed (telemetry, port counters, job logs,
benchmarks) or publishes an export must not take the rest of the nightly down with it. When it raises,
it is withheld: it keeps its previous contents, `withheld_steps` says why (the report's banner and the run
summary read it), and the steps after it run on. Dagster marks the step materialized with
``withheld`` in its metadata; the full trace is in the step's log and in ``withheld_steps.trace``."""
from __future__ import annotations

import functools
import traceback

from dagster import MaterializeResult, get_dagster_logger

from analysis.commands import data_health
from analysis.commands.preflight import one_line

WITHHELD = "withheld"  # metadata of a step that did not run to the end (it kept its previous contents)


def withheld_on_error(fn=None, *, step: str | None = None, missing: str | None = None):
    """Decorate an asset body (``@withheld_on_error``, or ``withheld_on_error(step=..., missing=...)`` for
    assets made in a loop, whose function names are all alike)."""
    if fn is None:
        return functools.partial(withheld_on_error, step=step, missing=missing)
    step = step or fn.__name__

    @functools.wraps(fn)  # Dagster reads the wrapped signature for its resources
    def run_step(*args, **kwargs):
        warehouse = kwargs["warehouse"]
        try:
            result = fn(*args, **kwargs)
        except Exception as exc:  # noqa: BLE001 - any crash of an optional step degrades the run, nothing more
            reason = f"{type(exc).__name__}: {one_line(exc)}"
            get_dagster_logger().error(f"{step} withheld: {reason}\n{traceback.format_exc()}")
            with warehouse.connect() as con:
                data_health.withhold(con, step, reason, traceback.format_exc(), missing)
            return MaterializeResult(metadata={WITHHELD: reason})
        with warehouse.connect() as con:
            data_health.release(con, step)
        return result

    return run_step
