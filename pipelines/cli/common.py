"""What the commands share: the --db option, the rules of their options, logging, one-line errors and crash logs."""
from __future__ import annotations

import logging
import sys
from pathlib import Path

import click
from click.core import ParameterSource


class SettingOption(click.Option):
    """An option whose default is an analysis setting's (analysis/settings.py), defined there once:
    ``setting=(SettingsClass, "field")``, ``per``: the analysis unit per the option's (60: seconds there, minutes
    here). tests/test_settings_defaults.py finds every numeric option's default here or in its list of the
    command line's own."""

    def __init__(self, *args, setting: tuple[type, str], per: int = 1, **kwargs):
        settings, name = setting
        value = getattr(settings, name)
        if per != 1:
            value = value // per if isinstance(value, int) and value % per == 0 else value / per
        self.setting = (settings, name, per)
        kwargs.setdefault("show_default", True)
        super().__init__(*args, default=value, **kwargs)


def setting_option(*decls, setting: tuple[type, str], per: int = 1, **kwargs):
    """click.option with the default of an analysis setting (SettingOption)."""
    return click.option(*decls, cls=SettingOption, setting=setting, per=per, **kwargs)


def _db_option(f):
    return click.option("--db", "db", type=click.Path(dir_okay=False, path_type=Path), default=None,
                        help="DuckDB warehouse file [default: $GOODPUT_DB or ./data/warehouse.duckdb].")(f)


def given(name: str) -> bool:
    """Whether the user gave the current command's option ``name`` (its parameter name), on the command line or
    from the environment, rather than leaving it at its default."""
    source = click.get_current_context().get_parameter_source(name)
    return source is not None and source not in (ParameterSource.DEFAULT, ParameterSource.DEFAULT_MAP)


def _flag(name: str) -> str:
    """The option as the user types it: --failure-rate for failure_rate."""
    for param in click.get_current_context().command.params:
        if param.name == name:
            return max(param.opts, key=len)
    return "--" + name.replace("_", "-")


def option_rules(conflicts: tuple = (), needs: tuple = ()) -> None:
    """A command's rules for its options, checked where they are parsed, before any work: options given together
    that conflict, and options given without the one they are for, are usage errors (exit 2) naming them, never
    silently ignored. ``conflicts``: (names, why): at most one of ``names`` may be given. ``needs``: (name,
    others, why): ``name`` is only read with one of ``others``. Each command calls this once, at its top."""
    for names, why in conflicts:
        clash = [n for n in names if given(n)]
        if len(clash) > 1:
            raise click.UsageError(f"{' and '.join(_flag(n) for n in clash)} conflict: {why}")
    for name, others, why in needs:
        if given(name) and not any(given(o) for o in others):
            raise click.UsageError(f"{_flag(name)} goes with {' or '.join(_flag(o) for o in others)}: {why}")


class RenamedOptions(click.Command):
    """A command some of whose options were renamed: the old spelling still works, for scripts written against
    it, and says what to use instead (on stderr). ``renamed``: {old: (new, why)}."""

    def __init__(self, *args, renamed: dict[str, tuple[str, str]] | None = None, **kwargs):
        super().__init__(*args, **kwargs)
        self.renamed = renamed or {}

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        out = []
        for i, arg in enumerate(args):
            if arg == "--":  # what follows is arguments, never options
                out += args[i:]
                break
            old, eq, value = arg.partition("=")
            if old in self.renamed:
                new, why = self.renamed[old]
                click.echo(f"goodput {ctx.info_name}: {old} is deprecated here, use {new} ({why})", err=True)
                arg = new + eq + value
            out.append(arg)
        return super().parse_args(ctx, out)


def _crashed(exc: Exception, out: Path) -> click.ClickException:
    """One line for a crash outside the steps (theirs are in the summary); its traceback goes to
    OUT/goodput-errors.log, as the steps' do."""
    import traceback

    from pipelines.runner import ERRORS_LOG

    log = Path(out) / ERRORS_LOG
    try:
        log.parent.mkdir(parents=True, exist_ok=True)
        log.write_text(traceback.format_exc())
        where = f"the full traceback is in {log}"
    except OSError:
        where = "the traceback could not be written to " + str(log)
    return click.ClickException(f"goodput stopped on {type(exc).__name__}: {_one_line(exc)} ({where}; please "
                                "report it)")


def _one_line(exc: BaseException) -> str:
    from analysis.commands.preflight import one_line

    return one_line(exc)


def _setup_logging(quiet: bool) -> None:
    logging.basicConfig(level=logging.WARNING, format="%(message)s", stream=sys.stderr)
    logging.getLogger("goodput").setLevel(logging.WARNING if quiet else logging.INFO)
