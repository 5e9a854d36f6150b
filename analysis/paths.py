"""Where goodput reads and writes when no option says: the warehouse (--db: $GOODPUT_DB, else
data/warehouse.duckdb), the demo's warehouse, the run's --out and the fleet's --db-dir. Below the warehouse and the hints, which
both name them (a hint leaves out a --db equal to what the follow-up would read unasked)."""
from __future__ import annotations

import os
from pathlib import Path

DEFAULT_DB = Path("data/warehouse.duckdb")
DEMO_DB = Path("data/demo.duckdb")  # `goodput demo`'s (`make demo`'s), recreated at each demo
RUN_OUT = Path("out")  # `goodput run`'s --out ($GOODPUT_OUT for the Dagster door): reports, exports/, ...
FLEET_DB_DIR = Path("data/fleet")  # the fleet commands' --db-dir unasked (`run --fleet`, `fleet export|report`)


def default_db_path() -> Path:
    return Path(os.environ.get("GOODPUT_DB", DEFAULT_DB))
