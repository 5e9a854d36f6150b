"""The source registry: every source folder goodput reads, declared once. Ingest (the parser of a folder), the
warehouse's raw tables (their inserts, the delete before a file is read again, the line accounting),
`goodput check`, the Dagster ingest assets, the daily source volume and the command line's help are derived
from these declarations. Imports nothing: the command line's help lists the folders without loading parsers.

Adding a source: write its parser module (the entry points are in analysis/ingest/contract.py and analysis/ingest/one_file.py:
``parse``, and optionally ``stream_parts``, ``parse_batch``, ``json_parts``, ``parquet_parts``), its tables'
DDL (sql/schema/warehouse.sql for a built-in source; ``Source.ddl`` for one added from outside), and one ``Source``
below, or ``register(Source(...))`` at run time, before the Dagster definitions are imported (their ingest
assets are made from the registry then): see tests/test_sources.py for a complete toy source."""
from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

_NAME = re.compile(r"[a-z_][a-z0-9_]*")  # folder, table and asset names are written into SQL and asset keys


@dataclass(frozen=True)
class Source:
    folder: str  # the folder below the source directory
    parser: str  # the parser module, imported by name
    tables: tuple[str, ...]  # raw tables its rows land in, each with (file, line_no); `goodput check` samples the first
    asset: str  # its Dagster ingest asset (group "ingest")
    missing: str  # what a report lacks without it (the data-health banner, a withheld ingest)
    names_hosts: bool = False  # `goodput check` warns of the hosts its rows name that ran no Slurm job
    events: str | None = None  # node_events.source of its rows in node_events
    # sql/ statement of its rows whose own time falls on $day, (source, rows), with $source = events or folder;
    # None: not a daily feed (its absence on a day is no missing input)
    volume: str | None = None
    sample: str | None = None  # sql/ statement of `goodput check`'s sample rows ($n), when not the first table's
    aliases: tuple[str, ...] = ()  # folder names people give it: a misnamed folder is pointed here
    ddl: Path | None = None  # a source added from outside: its CREATE TABLE IF NOT EXISTS statements

    def __post_init__(self):
        for name in (self.folder, self.asset, *self.tables):
            if not _NAME.fullmatch(name):
                raise ValueError(f"source {self.folder!r}: {name!r} is not a lower-case SQL name")


def _schema(name: str) -> Path:
    """A built-in source's DDL kept in a file of its own (sql/schema/<table>.sql, as ``Source.ddl``: run after
    sql/schema/warehouse.sql), where goodput ships it."""
    from analysis import package_files  # importlib.resources only: the help stays as quick
    return package_files.sql_dir().joinpath(*name.split("/")).with_suffix(".sql")


JOBS_FROM = ("slurm", "kubernetes")  # the folders jobs come from: a source directory needs a file in one

# In ingestion order: topology first (switch events are mapped to hosts through it).
BUILT_IN = (
    Source("topology", "analysis.ingest.parsers.topology", ("topology", "host_addresses"), "topology",
           "switch and port-counter events are not mapped to hosts, so link faults are not attributed",
           names_hosts=True, aliases=("cabling",)),
    Source("slurm", "analysis.ingest.parsers.sacct", ("sacct_records",), "sacct_records",
           "jobs are missing: failure rates, attribution, ETTR and goodput lack them",
           volume="ops/daily_volume_jobs", aliases=("sacct", "accounting", "jobs")),
    Source("slurm_events", "analysis.ingest.parsers.slurm_events", ("node_state_periods", "node_events"), "node_state_periods",
           "drain and down periods are missing: availability and out-of-service counts are too low",
           names_hosts=True, events="slurm", volume="ops/daily_volume_events", aliases=("events",)),
    Source("kernel", "analysis.ingest.parsers.kernel", ("node_events",), "kernel_events",
           "GPU and kernel faults (XID, ECC, ...) are not attributed",
           names_hosts=True, events="kernel", volume="ops/daily_volume_events",
           aliases=("dmesg", "kern", "syslog", "messages")),
    Source("switch", "analysis.ingest.parsers.switch", ("node_events",), "switch_events",
           "link faults seen only in switch logs are not attributed",
           names_hosts=True, events="switch", volume="ops/daily_volume_events"),
    Source("health", "analysis.ingest.parsers.health", ("node_events",), "health_results",
           "failed health checks are not attributed and drain no node",
           names_hosts=True, events="health", volume="ops/daily_volume_events", aliases=("nhc",)),
    # Kubernetes node health (NVSentinel, gpud, node-problem-detector Events): node events like kernel/ and health/
    Source("node_health", "analysis.ingest.parsers.node_health", ("node_events",), "node_health_events",
           "GPU and node faults reported by Kubernetes health agents (NVSentinel, gpud, node-problem-detector) "
           "are not attributed",  # no volume: events come on changes, not daily
           names_hosts=True, events="node_health", aliases=("nvsentinel", "gpud")),
    Source("benchmarks", "analysis.ingest.parsers.benchmarks", ("benchmark_results",), "benchmark_results",
           "benchmark verdicts and learned criteria lack these runs",
           names_hosts=True, volume="ops/daily_volume_benchmarks", aliases=("nccl", "superbench")),
    # its volume counts the telemetry table, port counters (network/) included
    Source("telemetry", "analysis.ingest.parsers.telemetry", ("telemetry",), "telemetry",
           "machines that slow their jobs, seen only in telemetry, are not flagged",
           names_hosts=True, volume="ops/daily_volume_telemetry", aliases=("dcgm", "metrics")),
    # port counters: long CSV/Parquet/Prometheus JSON like telemetry, perfquery, ibqueryerrors
    Source("network", "analysis.ingest.parsers.network", ("telemetry",), "network_counters",
           "link faults seen only in port counters are not attributed",
           names_hosts=True, sample="ingest/check_sample_counters"),
    Source("tickets", "analysis.ingest.parsers.tickets", ("tickets", "node_events"), "tickets",
           "repairs are unknown: nodes repaired since their last fault may still be listed for draining",
           names_hosts=True, events="ticket"),
    Source("joblogs", "analysis.ingest.parsers.joblogs", ("job_log_lines",), "job_logs",
           "failures seen only in the jobs' own logs (NCCL, CUDA, PyTorch errors) are not attributed"),
    # kubectl get -o json snapshots, watch output and event-exporter lines; its table's DDL is a file of its own
    Source("kubernetes", "analysis.ingest.parsers.kubernetes", ("k8s_objects",), "k8s_objects",
           "pods and workloads of Kubernetes clusters (JobSet, Kueue, PyTorchJob) and their Events are missing",
           sample="ingest/check_sample_k8s", aliases=("k8s", "kubectl"), ddl=_schema("schema/k8s_objects")),
)

# folder -> declaration, in ingestion order; register() adds to it, so every reader sees a source added at run time
SOURCES: dict[str, Source] = {s.folder: s for s in BUILT_IN}

# node_events.source values goodput writes itself, from what it derives, and the asset that writes each: with the
# registry's ``events`` they are every source a taxonomy rule can name (event_sources)
DERIVED_EVENTS = {
    "app": "job_log_events",  # errors found in the jobs' own logs (NCCL, CUDA, PyTorch)
    "telemetry": "machine_alerts",  # machines the telemetry detector confirmed as drifting from their peers
    "network": "port_counter_events",  # fabric port-counter deltas over their thresholds
    "straggler": "straggler_episodes",  # nodes that slowed their jobs (degraded pace)
}

# truth/: `goodput simulate` writes its ground truth beside the logs; labels/: operator
# labels for the models (labels/lemons.csv), read by `goodput models`, not ingested.
IGNORED_FOLDERS = ("truth", "labels")


def register(source: Source) -> Source:
    """Add a source (read after the built-in ones). Its tables are created when a warehouse is next opened,
    from ``source.ddl`` unless a table is already a raw table."""
    if source.folder in SOURCES or source.folder in IGNORED_FOLDERS:
        raise ValueError(f"source folder {source.folder}/ is already declared")
    if any(s.asset == source.asset for s in SOURCES.values()):
        raise ValueError(f"ingest asset {source.asset} is already declared")
    new = set(source.tables) - set(raw_tables())
    if new and source.ddl is None:
        raise ValueError(f"source {source.folder}: no DDL for its new table(s) {sorted(new)}")
    SOURCES[source.folder] = source
    return source


def unregister(folder: str) -> None:
    """Remove a source added with register() (a test's toy source)."""
    if any(s.folder == folder for s in BUILT_IN):
        raise ValueError(f"{folder}/ is a built-in source")
    SOURCES.pop(folder, None)


def event_sources() -> tuple[str, ...]:
    """Every node_events.source: the declared sources' ``events`` (a source registered at run time included),
    then the derived ones (DERIVED_EVENTS)."""
    return tuple(dict.fromkeys([*(s.events for s in SOURCES.values() if s.events), *DERIVED_EVENTS]))


def raw_tables() -> tuple[str, ...]:
    """Every table that holds rows read from files, once each, in source order."""
    return tuple(dict.fromkeys(t for s in SOURCES.values() for t in s.tables))


def ddl_files() -> list[Path]:
    """The DDL of the sources added from outside, and of the built-in ones whose tables are declared in a file of
    their own (the others' is sql/schema/warehouse.sql)."""
    return [s.ddl for s in SOURCES.values() if s.ddl is not None]


def missing(folder: str) -> str:
    """What a report lacks without the folder's files ("" for a folder no source reads)."""
    source = SOURCES.get(folder)
    return source.missing if source else ""


def alias(folder: str) -> str | None:
    """The source a folder name probably means (sacct/ for slurm/), or None."""
    return next((s.folder for s in SOURCES.values() if folder in s.aliases), None)
