"""Every command README.md and the pages of docs/ give works as written. goodput's are parsed by its own click
definitions (code blocks in full, prose and the command table option by option; `goodput check` is run on
the sample); Dagster's by theirs; the external tools' options, keys and fields are checked against what
their manuals document, copied below with the source of each list."""
from __future__ import annotations

import importlib
import importlib.metadata
import re

import click
import pytest
from click.testing import CliRunner

from analysis.sources import SOURCES
from pipelines.cli import DEMO_SOURCE, main
from tests.docs_commands import REPO, Command, commands

# -- what the external tools document -------------------------------------------------------------------
# A short option that takes a value ends in "=" (its value may be attached: -Iseconds, -ojson).
DOCUMENTED = {
    # sacct(1), Slurm 25.11, doc/man/man1/sacct.1, OPTIONS (A to S)
    "sacct": {"-A=", "--accounts", "--array", "-L", "--allclusters", "-X", "--allocations", "-a", "--allusers",
              "-x=", "--associations", "-B", "--batch-script", "-b", "--brief", "-M=", "--clusters", "-c",
              "--completion", "-C=", "--constraints", "--delimiter", "-D", "--duplicates", "-E=", "--endtime",
              "--env-vars", "--expand-patterns", "--federation", "-f=", "--file", "-F=", "--flags", "-o=", "--format",
              "-g=", "--gid", "--group", "-h", "--help", "-e", "--helpformat", "-j=", "--jobs", "--json", "--local",
              "-l", "--long", "--name", "-i=", "--nnodes", "-I=", "--ncpus", "--noconvert", "-N=", "--nodelist", "-n",
              "--noheader", "-p", "--parsable", "-P", "--parsable2", "-r=", "--partition", "-q=", "--qos", "-R=",
              "--reason", "-S=", "--starttime"},
    # sacctmgr(1), Slurm, doc/man/man1/sacctmgr.1, OPTIONS
    "sacctmgr": {"-s", "--associations", "-h", "--help", "-i", "--immediate", "-n", "--noheader", "-p", "--parsable",
                 "-P", "--parsable2", "-Q", "--quiet", "-r", "--readonly", "-v", "--verbose", "-V", "--version"},
    # journalctl(1), systemd, man/journalctl.xml: Source, Filtering and Output options used here
    "journalctl": {"--system", "--user", "-M=", "--machine", "-m", "--merge", "-D=", "--directory", "--file",
                   "-S=", "--since", "-U=", "--until", "-c=", "--cursor", "-b", "--boot", "-u=", "--unit", "-t=",
                   "--identifier", "-p=", "--priority", "--facility", "-g=", "--grep", "-k", "--dmesg", "-o=",
                   "--output", "--output-fields", "-n=", "--lines", "-r", "--reverse", "--utc", "--no-pager"},
    # dmesg(1), util-linux, sys-utils/dmesg.1.adoc, OPTIONS
    "dmesg": {"-C", "--clear", "-c", "--read-clear", "-D", "--console-off", "-d", "--show-delta", "-E", "--console-on",
              "-e", "--reltime", "-F=", "--file", "-f=", "--facility", "-H", "--human", "-J", "--json", "-K=",
              "--kmsg-file", "-k", "--kernel", "-L", "--color", "-l=", "--level", "-n=", "--console-level",
              "--noescape", "-P", "--nopager", "-p", "--force-prefix", "-r", "--raw", "-S", "--syslog", "-s=",
              "--buffer-size", "-T", "--ctime", "--since", "--until", "-t", "--notime", "--time-format", "-u",
              "--userspace", "-w", "--follow", "-W", "--follow-new", "-x", "--decode", "-h", "--help", "-V",
              "--version"},
    # date(1), GNU coreutils: -d/--date=STRING, -I[FMT]/--iso-8601[=FMT], -u/--utc, +FORMAT
    "date": {"-d=", "--date", "-I=", "--iso-8601", "-u", "--utc", "-R", "--rfc-email"},
    "uptime": {"-s", "--since", "-p", "--pretty"},  # uptime(1), procps-ng
    "hostname": {"-s", "--short", "-f", "--fqdn"},  # hostname(1), net-tools
    "mkdir": {"-p", "--parents", "-m=", "--mode"},  # mkdir(1), GNU coreutils
    "curl": {"-s", "--silent", "--data-urlencode", "-G", "--get", "-o=", "--output"},  # curl(1)
    # sbatch(1) and srun(1), Slurm: -x/--exclude=<node_name_list>, -o/--output=<filename_pattern>, --wrap=<command>;
    # -l/--label
    "sbatch": {"-x=", "--exclude", "-o=", "--output", "--wrap"},
    "srun": {"-l", "--label"},
    # SuperBench CLI, microsoft.github.io/superbenchmark/docs/cli and user-tutorial/data-diagnosis
    "sb": {"--data-file", "--rule-file", "--baseline-file", "--output-dir", "--output-file-format", "--output-all"},
    "scontrol": {"-M=", "--clusters"},  # scontrol(1): -M, --clusters=<string>: the cluster to issue commands to
    "gzip": set(), "perfquery": set(), "cat": set(),
    # kubectl get, kubernetes.io/docs/reference/kubectl/generated/kubectl_get: -A/--all-namespaces,
    # -o/--output=json, -w/--watch, --watch-only, --output-watch-events, --field-selector
    "kubectl": {"-A", "--all-namespaces", "-o=", "--output", "-w", "--watch", "--watch-only", "--output-watch-events",
                "--field-selector"},
    "jq": {"-c", "--compact-output", "--arg", "-r", "--raw-output"},  # jq(1) manual, "Invoking jq"
}
# sacct(1) --helpformat, "Fields available" (the ones the docs name)
SACCT_FIELDS = {"Account", "AllocTRES", "Cluster", "Elapsed", "Eligible", "End", "ExitCode", "JobID", "JobIDRaw",
                "JobName", "NNodes", "NodeList", "Partition", "Priority", "QOS", "Reason", "Restarts", "Start", "State",
                "Submit", "SubmitLine", "User"}
# sacctmgr(1) "SPECIFICATIONS FOR EVENTS" (and Format=, Where); the format fields: "LIST/SHOW EVENT FORMAT OPTIONS",
# plus TimeStart/TimeEnd, which src/sacctmgr/common.c (_get_print_field) takes for Start/End and prints as headers
SACCTMGR_EVENT_SPECS = {"all_clusters", "all_time", "clusters", "condflags", "end", "event", "maxtres", "mintres",
                        "nodes", "reason", "start", "states", "user", "format", "where"}
SACCTMGR_EVENT_FORMAT = {"cluster", "clusternodes", "duration", "end", "event", "eventraw", "nodename", "reason",
                         "start", "state", "stateraw", "tres", "user", "timestart", "timeend"}
# journalctl(1): -o modes; matches FIELD=VALUE on systemd.journal-fields(7) fields (_TRANSPORT=kernel is what -k adds)
JOURNAL_OUTPUTS = {"short", "short-full", "short-iso", "short-iso-precise", "short-precise", "short-monotonic",
                   "short-delta", "short-unix", "verbose", "export", "json", "json-pretty", "json-sse", "json-seq",
                   "cat", "with-unit"}
JOURNAL_FIELDS = {"_TRANSPORT", "_HOSTNAME", "_BOOT_ID", "PRIORITY", "SYSLOG_IDENTIFIER", "_SYSTEMD_UNIT"}
DATE_ISO = {"date", "hours", "minutes", "seconds", "ns"}  # date(1): -I[FMT]
DMESG_TIME_FORMATS = {"ctime", "reltime", "delta", "notime", "iso", "raw"}  # dmesg(1) --time-format
# scontrol(1), "SPECIFICATIONS FOR UPDATE COMMAND, NODES"
SCONTROL_NODE_UPDATE = {"nodename", "features", "gres", "reason", "state", "weight"}
SB_COMMANDS = {("result", "diagnosis"), ("result", "summary"), ("result", "generate-baseline")}
# commands the docs use with no option to check
PLAIN = {"cd", "echo", "true", "[", "gzip", "perfquery", "cat"}

GOODPUT = {"goodput"}
CLICK_TOOLS = {"dagster", "dagster-webserver", "dagster-daemon"}  # their own click definitions, from the venv
TOOLS = GOODPUT | CLICK_TOOLS | set(DOCUMENTED) | {"make", "python"}
ALL = commands(TOOLS)


def _ids(items: list[Command]) -> list[str]:
    return [f"{c.doc}:{' '.join(c.words)[:60]}" for c in items]


def _goodput_args(c: Command) -> list[str] | None:
    if c.tool == "goodput":
        return list(c.words[1:])
    if c.words[:3] == ("python", "-m", "pipelines"):
        return list(c.words[3:])
    return None


GOODPUT_COMMANDS = [c for c in ALL if _goodput_args(c) not in (None, [], ["..."])]
EXTERNAL = [c for c in ALL if _goodput_args(c) is None]


# -- goodput ----------------------------------------------------------------------------------------------

def _option_names(words) -> list[tuple[str, str | None]]:
    """(option, the word after it) for every option a synopsis or fragment names."""
    out = []
    for i, w in enumerate(words):
        m = re.match(r"^[\[(]*(--?[A-Za-z][\w-]*)", w)
        if m:
            out.append((m.group(1), words[i + 1] if i + 1 < len(words) else None))
    return out


def _opts(command: click.Command) -> dict[str, click.Parameter]:
    return {o: p for p in command.params for o in (*p.opts, *p.secondary_opts)}


@pytest.mark.parametrize("c", GOODPUT_COMMANDS, ids=_ids(GOODPUT_COMMANDS))
def test_goodput_commands_in_the_docs_are_goodput_commands(c):
    args = _goodput_args(c)
    if args[0].startswith("-"):  # `goodput --version`
        assert args[0] in _opts(main) or args[0] == "--version", c.text
        return
    assert args[0] in main.commands, f"{c.doc}: `{c.text}`: goodput has no command {args[0]}"
    command, named, args = _subcommand(args)
    if c.in_block:  # a full command: parsed as goodput parses it (types, required options, arguments)
        words = [DEMO_SOURCE.as_posix() if w == "$SRC" else re.sub(r"\$\w+", "X", w) for w in args]
        command.make_context(named, words)
        return
    opts = _opts(command)
    for name, value in _option_names(args):
        assert name in opts, f"{c.doc}: `{c.text}`: goodput {named} has no option {name}"
        param = opts[name]
        if isinstance(param.type, click.Choice) and value and not value.startswith("-"):
            for choice in value.strip("[]").split("|"):
                assert choice in param.type.choices, f"{c.doc}: `{c.text}`: {name} takes no {choice}"


def _subcommand(args: list[str]) -> tuple[click.Command, str, list[str]]:
    """The command a goodput command line names (a group's subcommand: `fleet export`), its name, its arguments."""
    command, path, args = main.commands[args[0]], [args[0]], list(args[1:])
    while isinstance(command, click.Group) and args and args[0] in command.commands:
        command = command.commands[args[0]]
        path.append(args.pop(0))
    return command, " ".join(path), args


def _every_command(group: click.Group = main, prefix: str = "") -> dict[str, click.Command]:
    out = {}
    for name, command in group.commands.items():
        if isinstance(command, click.Group):
            out.update(_every_command(command, f"{prefix}{name} "))
        else:
            out[prefix + name] = command
    return out


def test_the_command_table_lists_every_command_and_option():
    rows = [line for line in (REPO / "README.md").read_text().splitlines() if line.startswith("| `goodput ")]
    named: dict[str, set[str]] = {}
    for row in rows:
        synopsis = row.split("`")[1].replace("\\|", "|").split()
        _, name, args = _subcommand(synopsis[1:])
        named.setdefault(name, set()).update(o for o, _ in _option_names(args))
    commands = _every_command()
    assert set(commands) <= set(named), f"not in README's command table: {set(commands) - set(named)}"
    for name, command in commands.items():
        missing = [p.opts[-1] for p in command.params if isinstance(p, click.Option) and p.opts[-1] != "--help"
                   and not set(p.opts) & named[name]]
        assert not missing, f"README's row for goodput {name} lacks {missing}"


def test_the_docs_check_command_runs_on_the_sample():
    checks = {tuple(_goodput_args(c)) for c in GOODPUT_COMMANDS if c.in_block and _goodput_args(c)[0] == "check"}
    assert checks  # README.md and docs/connect.md both give it
    for check in checks:
        args = [DEMO_SOURCE.as_posix() if w == "$SRC" else w for w in check]
        result = CliRunner().invoke(main, args)
        assert result.exit_code == 0, result.output
        assert re.search(r"^slurm/\s+OK", result.output, re.M)
    # the docs' `goodput run` lines are the command tests/conftest.py's demo_warehouse runs on the sample


def test_every_command_has_help_and_run_names_every_source_folder():
    for name in _every_command():
        result = CliRunner().invoke(main, [*name.split(), "--help"])
        assert result.exit_code == 0 and "Usage:" in result.output, name
    text = " ".join(CliRunner().invoke(main, ["run", "--help"]).output.split())
    assert all(f"{folder}/" in text for folder in SOURCES), text


# -- Dagster, make, the bench scripts -----------------------------------------------------------------------

def _click_entry_point(name: str) -> click.Command:
    """The click command behind a console script of the venv (Dagster's call `cli` from a `main()`)."""
    (ep,) = [e for e in importlib.metadata.entry_points(group="console_scripts") if e.name == name]
    loaded = ep.load()
    return loaded if isinstance(loaded, click.Command) else importlib.import_module(ep.module).cli


def _external(tool: str) -> list[Command]:
    return [c for c in EXTERNAL if c.tool == tool]


@pytest.mark.parametrize("c", [c for c in EXTERNAL if c.tool in CLICK_TOOLS],
                         ids=_ids([c for c in EXTERNAL if c.tool in CLICK_TOOLS]))
def test_dagster_commands_take_the_options_given(c):
    command, words = _click_entry_point(c.tool), list(c.words[1:])
    while words and isinstance(command, click.Group) and not words[0].startswith("-"):
        command = command.commands[words.pop(0)]
    command.make_context(c.tool, words)  # raises on an unknown option or a missing value


def test_make_targets_and_bench_scripts_exist():
    makefile = (REPO / "Makefile").read_text()
    for c in _external("make"):
        assert re.search(rf"^{re.escape(c.words[1])}:", makefile, re.M), c.text
    for c in _external("python"):
        module = c.words[1] == "-m"  # python -m package.module: the module's file
        script = REPO / (c.words[2].replace(".", "/") + ".py" if module else c.words[1])
        assert script.is_file(), c.text
        for name, _ in _option_names(c.words[3 if module else 2:]):
            assert f'"{name}"' in script.read_text(), f"{c.text}: {script.name} takes no {name}"


# -- external tools -----------------------------------------------------------------------------------------

def _check_options(c: Command, documented: set[str]) -> list[str]:
    """The words that are not options, after checking that every option is documented."""
    plain, takes_value = {o.rstrip("=") for o in documented}, {o[:-1] for o in documented if o.endswith("=")}
    rest, words = [], [w.strip("[]") for w in c.words[1:]]
    for w in words:
        if w.startswith("--"):
            assert w.split("=")[0] in plain, f"{c.doc}: `{c.text}`: {c.tool} documents no {w.split('=')[0]}"
        elif re.fullmatch(r"-[A-Za-z]\S*", w):
            for i, ch in enumerate(w[1:]):
                assert f"-{ch}" in plain, f"{c.doc}: `{c.text}`: {c.tool} documents no -{ch}"
                if f"-{ch}" in takes_value:
                    break  # the rest is its value
        else:
            rest.append(w)
    return rest


def _value(c: Command, *names: str) -> list[str]:
    """The values given to an option (`--opt X`, `--opt=X`, `-oX`)."""
    out, words = [], list(c.words)
    for i, w in enumerate(words):
        for n in names:
            if w == n and i + 1 < len(words):
                out.append(words[i + 1])
            elif w.startswith(n + "=") or (len(n) == 2 and w.startswith(n) and len(w) > 2 and not n.startswith("--")):
                out.append(w[len(n) + (w[len(n)] == "="):])
    return out


@pytest.mark.parametrize("c", [c for c in EXTERNAL if c.tool in DOCUMENTED], ids=_ids([c for c in EXTERNAL
                                                                                     if c.tool in DOCUMENTED]))
def test_external_commands_use_documented_options(c):
    rest = _check_options(c, DOCUMENTED[c.tool])
    if c.tool == "sacct":
        for fields in _value(c, "--format", "-o"):
            unknown = set(fields.split(",")) - SACCT_FIELDS - {"..."}
            assert not unknown, f"{c.text}: sacct documents no field {unknown}"
    elif c.tool == "sacctmgr":
        assert rest[:2] in (["show", "event"], ["list", "event"]), f"{c.text}: only `sacctmgr show event` is checked"
        for word in rest[2:]:
            key, _, value = word.partition("=")
            assert key.lower() in SACCTMGR_EVENT_SPECS, f"{c.text}: sacctmgr documents no event spec {key}"
            if key.lower() == "format":
                assert {f.lower() for f in value.split(",")} <= SACCTMGR_EVENT_FORMAT, c.text
            if key.lower() == "event":
                assert value.lower() in ("node", "cluster"), c.text
    elif c.tool == "journalctl":
        assert set(_value(c, "-o", "--output")) <= JOURNAL_OUTPUTS, c.text
        assert all(w.split("=")[0] in JOURNAL_FIELDS for w in rest if "=" in w), c.text
    elif c.tool == "dmesg":
        assert set(_value(c, "--time-format")) <= DMESG_TIME_FORMATS, c.text
    elif c.tool == "date":
        assert set(_value(c, "-I")) <= DATE_ISO and all(w.startswith("+") or w in _value(c, "-d") for w in rest), c.text
    elif c.tool == "scontrol":
        assert rest[0] == "update" and all(w.split("=")[0].lower() in SCONTROL_NODE_UPDATE for w in rest[1:]), c.text
    elif c.tool == "sb":
        assert tuple(rest[:2]) in SB_COMMANDS, c.text


def test_every_command_in_a_code_block_is_checked():
    tools = {c.tool for c in ALL if c.in_block}
    unchecked = tools - TOOLS - PLAIN
    assert not unchecked, f"code blocks run {unchecked}: add their documented options to DOCUMENTED"
    assert {"sacct", "sacctmgr", "journalctl", "goodput"} <= tools  # the snippets the checks are for were found
