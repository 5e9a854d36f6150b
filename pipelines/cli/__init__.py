"""The `goodput` command line (pipelines/cli/app.py), over the core (analysis/) and the Dagster door (pipelines/runner.py)."""
from pipelines.cli.app import main
from pipelines.cli.run import DEMO_SOURCE

__all__ = ["DEMO_SOURCE", "main"]
