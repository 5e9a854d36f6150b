"""Dagster resources: where the warehouse lives and where the logs come from."""

import os
from contextlib import contextmanager
from pathlib import Path

from dagster import ConfigurableResource

from analysis import warehouse
from analysis.ingest import load_options
from analysis.model import IngestOptions


class Warehouse(ConfigurableResource):
    """The DuckDB file. Default ./data/warehouse.duckdb, or $GOODPUT_DB."""
    db_path: str = os.environ.get("GOODPUT_DB", str(warehouse.DEFAULT_DB))

    @contextmanager
    def connect(self):
        con = warehouse.connect(Path(self.db_path))
        try:
            yield con
        finally:
            con.close()


class LogSources(ConfigurableResource):
    """The source directory (one folder per source) and how to read it."""
    source_dir: str = os.environ.get("GOODPUT_SOURCE", "tests/fixtures/demo_source")
    tz: str | None = None  # overrides goodput.yaml in the source directory
    sacct_delimiter: str | None = None
    boot_times: dict[str, str] = {}  # host -> ISO time, for raw dmesg; merged over goodput.yaml's

    def options(self) -> IngestOptions:
        return load_options(Path(self.source_dir), tz=self.tz, sacct_delimiter=self.sacct_delimiter,
                            boot_times=self.boot_times or None)


class TaxonomyConfig(ConfigurableResource):
    """Failure taxonomy and attribution settings. rules_file: an operator's
    override file merged over taxonomy/rules.yaml (default $GOODPUT_RULES)."""
    rules_file: str | None = os.environ.get("GOODPUT_RULES") or None
    run_gap_minutes: int = 60  # a resubmission within this gap continues a job run
    crash_loop_min: int = 5  # restarts after failures that make a crash loop
    incident_gap_minutes: int = 30  # events closer than this are one node incident

    def load(self):
        from analysis.taxonomy import load

        return load(self.rules_file)
