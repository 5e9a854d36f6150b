"""Kubernetes Events about nodes (node-problem-detector's, through an event exporter): the third shape
node_health/ reads (node_health.py).

A line is one core/v1 Event as resmoio/kubernetes-event-exporter writes it (the Event's fields inline, plus
``clusterName`` and ``involvedObject`` with its labels; pkg/kube/event.go). Only events whose
``involvedObject.kind`` is ``Node`` are node history: node-problem-detector's (``source.component``
``kernel-monitor``, ``custom-plugin-monitor``, ...: reasons KernelOops, TaskHung, OOMKilling, DockerHung,
FilesystemIsReadOnly, FabricManagerNotActive, ...) and the kubelet's. Events about other objects (pods, jobs)
are skipped, counted: the kubernetes/ source reads them. host: ``involvedObject.name``; time:
``lastTimestamp`` (the exporter writes an event again each time its count grows), else ``eventTime``,
``firstTimestamp``, ``metadata.creationTimestamp``; none: a reject.

Rows: kind from the reason and the reporting component (node_health.AREAS), code the reason; type ``Warning``
-> severity 'warning'; ``Normal`` (a condition back to normal, a node starting) -> kind 'health_ok', severity
'info': never blamed. The count and component are kept in the message.
"""
from __future__ import annotations

import polars as pl

from analysis.ingest.lines import make_rejects
from analysis.ingest.timeutil import in_years, outside_years

KEYS = ("involvedObject", "source", "lastTimestamp", "firstTimestamp", "eventTime", "count", "metadata",
        "reason", "type", "message")  # read beside NVSentinel's and gpud's fields (node_health._SCHEMA)


def events(rows: pl.DataFrame, areas, read_time) -> tuple[pl.DataFrame, pl.DataFrame, pl.Series]:
    """Exported Event lines (line_no, text and KEYS as JSON text) -> (node_events rows, rejects, line_no of the
    lines skipped: events about other objects than nodes). ``areas``/``read_time`` as in gpud.events."""
    obj = pl.col("involvedObject")
    g = rows.with_columns(
        object_kind=obj.str.json_path_match("$.kind"), host=obj.str.json_path_match("$.name").replace("", None),
        component=pl.col("source").str.json_path_match("$.component").replace("", None),
        stamp=pl.coalesce(*[pl.col(k).replace("", None) for k in ("lastTimestamp", "eventTime", "firstTimestamp")],
                          pl.col("metadata").str.json_path_match("$.creationTimestamp").replace("", None)))
    other = g.filter(pl.col("object_kind") != "Node")["line_no"]  # (no kind at all: a reject below)
    g = g.filter((pl.col("object_kind") == "Node").fill_null(True)).with_columns(t=read_time(pl.col("stamp")))
    why = (pl.when(pl.col("object_kind").is_null()).then(pl.lit("Kubernetes Event whose involvedObject names no kind"))
           .when(pl.col("host").is_null()).then(pl.lit("Kubernetes Event about a node that names none "
                                                          "(involvedObject.name)"))
           .when(pl.col("stamp").is_null()).then(pl.lit("Kubernetes Event without a time (lastTimestamp, eventTime, "
                                                         "firstTimestamp)"))
           .when(pl.col("t").is_null()).then(pl.format("unparseable time '{}'", pl.col("stamp")))
           .when(~in_years(pl.col("t"))).then(outside_years(pl.col("t"), pl.col("stamp"))))
    g = g.with_columns(why=why)
    bad, good = g.filter(pl.col("why").is_not_null()), g.filter(pl.col("why").is_null())
    said = pl.concat_str(pl.col("reason").fill_null(""), pl.col("component").fill_null(""), separator=" ") \
        .str.to_lowercase()
    normal = pl.col("type").str.to_lowercase() == "normal"
    note = pl.concat_str(pl.format(" [reason {}", pl.col("reason").fill_null("?")),
                         pl.format("; {}", pl.col("type").fill_null("?")),
                         pl.when(pl.col("component").is_not_null()).then(pl.format("; from {}", pl.col("component")))
                         .otherwise(pl.lit("")),
                         pl.when(pl.col("count").cast(pl.Int64, strict=False) > 1)
                         .then(pl.format("; count {}", pl.col("count"))).otherwise(pl.lit("")), pl.lit("]"))
    out = good.select(
        pl.col("t").alias("event_time"), "host", pl.lit("node_health").alias("source"),
        kind=pl.when(normal).then(pl.lit("health_ok")).otherwise(areas(said)), code=pl.col("reason"),
        severity=pl.when(normal).then(pl.lit("info")).otherwise(pl.lit("warning")),
        message=pl.col("message").fill_null(pl.col("reason")) + note, device=pl.lit(None, pl.Utf8),
        reporter=pl.col("component").fill_null(pl.lit("kubernetes")), line_no="line_no")
    return out, make_rejects(bad["line_no"], bad["text"], bad["why"]), other
