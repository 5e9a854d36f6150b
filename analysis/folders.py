"""The source folders goodput reads, in ingestion order (topology first: switch events are mapped to
hosts through it), each with its parser module. A module of its own, importing nothing: the command
line's help lists the folders without loading the parsers."""

SOURCES: dict[str, str] = {
    "topology": "topology", "slurm": "sacct", "slurm_events": "slurm_events", "kernel": "kernel",
    "switch": "switch", "health": "health", "benchmarks": "benchmarks", "telemetry": "telemetry",
    "network": "network",  # port counters: long CSV/Parquet/Prometheus JSON like telemetry, perfquery, ibqueryerrors
    "tickets": "tickets", "joblogs": "joblogs",
}
# truth/: `goodput simulate` writes its ground truth beside the logs; labels/: operator
# labels for the models (labels/lemons.csv), read by `goodput models`, not ingested.
IGNORED_FOLDERS = ("truth", "labels")
