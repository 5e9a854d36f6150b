"""The `goodput` command line: the group and its commands, one module per command group."""
from __future__ import annotations

import click

from pipelines.cli.check import check_command
from pipelines.cli.criteria import criteria_command
from pipelines.cli.ettr import ettr
from pipelines.cli.fleet import fleet_command
from pipelines.cli.forget import forget
from pipelines.cli.models import export_command, models_command
from pipelines.cli.query import sql_command, why
from pipelines.cli.run import demo, run
from pipelines.cli.simulate import simulate


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="goodput", message="goodput %(version)s")
def main() -> None:
    """goodput: why GPU jobs fail, which nodes are lemons, how much training time the fleet loses."""
    from analysis.threads import bound_native_threads

    bound_native_threads()  # the machine is shared: no spinning thread pools (analysis/threads.py)


for command in (run, demo, simulate, sql_command, why, forget, ettr, models_command, export_command, criteria_command,
                check_command, fleet_command):
    main.add_command(command)
