"""Samples in long form -> ``telemetry`` rows: the rules the long CSV, Parquet and Prometheus JSON readers share.

A sample is a time, a metric name, a value and labels: Prometheus' labels, or a CSV/Parquet file's columns
other than time, metric and value. The labels say which host, GPU and series a sample belongs to:
  * host: the first non-empty of host, node, kubernetes_node, hostname (DCGM's ``Hostname``), node_name,
    nodename, instance (label names in any case); a ``:<port>`` is cut (``node01:9100`` -> node01,
    ``[fe80::1]:9100`` -> fe80::1); none: the host the file's name or folder names.
  * gpu: gpu, gpu_id, gpu_index, gpu_idx or index (``3``, ``gpu3``, ``nvidia3`` -> 3); without one, a
    ``device`` that names a GPU (DCGM's ``nvidia3``).
  * left out, as they name the scrape target, the workload or the GPU rather than a series (so a metric
    is one series per host and GPU whatever the exporter or Kubernetes attaches): the host and GPU labels
    above, job, endpoint, service, namespace, pod, container, prometheus, prometheus_replica, DCGM's UUID,
    pci_bus_id, modelName and DCGM_FI_DRIVER_VERSION, ``exported_`` + any of these, and a ``device`` that
    names a GPU.
  * any other label stays in the metric name, Prometheus style, sorted by name, empty ones dropped:
    ``node_infiniband_symbol_error_total{device="mlx5_0",port="1"}`` (an ``hca`` label is read as
    ``device``). A name that already carries ``{...}`` gets the labels added inside.
Values are numbers (as text or not). Rejected with their reason, never stored: text that is no number,
NaN (no reading; in Parquet a Prometheus stale marker, the NaN whose bits are 0x7ff0000000000002, is
named as such: the series ended), +Inf and -Inf, and on a DCGM_* metric DCGM's blank sentinels
(2^63 - 16 .. 2^63 - 13, which are 2^63 as a float, and 2^47 .. 2^47 + 3: the field is not supported,
not found or not permitted on that GPU; older dcgm-exporters print them as readings).
"""
from __future__ import annotations

import polars as pl

HOST_LABELS = ("host", "node", "kubernetes_node", "hostname", "node_name", "nodename", "instance")
GPU_LABELS = ("gpu", "gpu_id", "gpu_index", "gpu_idx", "index")
DEVICE_LABELS = ("device", "hca")
TARGET_LABELS = {"__name__", "job", "endpoint", "service", "namespace", "pod", "container", "prometheus",
                 "prometheus_replica", "uuid", "pci_bus_id", "modelname", "dcgm_fi_driver_version"}
GPU_TEXT = r"^(?:gpu|nvidia)?[ _:-]?(\d+)(?:\.0+)?$"  # matched on the lowercased text
STALE_NAN_BITS = 0x7FF0000000000002
STALE = "Prometheus stale marker (the series ended: its target went away or stopped exporting it)"
_DCGM_BLANK_INT64 = 2.0 ** 63
_DCGM_BLANK_FP64 = 2.0 ** 47


def col(label: str) -> str:
    """The frame column holding a label (prefixed: a label may be called 'value' or 'time')."""
    return f"l:{label}"


def _dropped(low: str) -> bool:
    base = low.removeprefix("exported_")
    return base in TARGET_LABELS or base in HOST_LABELS or base in GPU_LABELS


def _text(label: str) -> pl.Expr:
    return pl.col(col(label)).cast(pl.Utf8).str.strip_chars().replace("", None)


def _escaped(e: pl.Expr) -> pl.Expr:
    return (e.str.replace_all("\\", "\\\\", literal=True).str.replace_all('"', '\\"', literal=True)
            .str.replace_all("\n", "\\n", literal=True))


def resolve(frame: pl.DataFrame, labels: list[str], host_hint: str | None) -> pl.DataFrame:
    """``frame``: a Utf8 'metric' column (the name) and one column per label (``col(label)``) -> the same
    with 'host', 'gpu' (text) and 'metric' (the name with the labels kept), the label columns dropped.
    Worked out once per distinct series (a file holds many samples of few series), then joined back."""
    keys = ["metric", *[col(label) for label in labels]]
    # text keys as codes of their own (freed with the frame): each text is hashed once, not by both the unique
    # and the join (a third of the work on a file of long metric names)
    codes = pl.Categorical(pl.Categories.random())
    frame = frame.with_columns(pl.col(k).cast(codes) for k in keys if frame.schema[k] == pl.Utf8)
    distinct = frame.select(keys).unique().with_columns(**_series_exprs(labels, host_hint))
    return (frame.join(distinct, on=keys, how="left", nulls_equal=True, maintain_order="left")
            .drop(keys).rename({"resolved": "metric"}))


def _series_exprs(labels: list[str], host_hint: str | None) -> dict[str, pl.Expr]:
    by_low: dict[str, str] = {}
    for label in labels:
        by_low.setdefault(label.lower(), label)
    hosts = [by_low[h] for h in HOST_LABELS if h in by_low]
    gpus = [by_low[g] for g in GPU_LABELS if g in by_low]
    devices = [by_low[d] for d in DEVICE_LABELS if d in by_low]
    host = pl.coalesce([*[_text(h) for h in hosts], pl.lit(host_hint, pl.Utf8)])
    host = host.str.replace(r"^\[([^\]]*)\]:\d+$", "$1").str.replace(r"^([^:]+):\d+$", "$1")
    device = pl.coalesce([_text(d) for d in devices]) if devices else pl.lit(None, pl.Utf8)
    names_gpu = device.str.to_lowercase().str.contains(GPU_TEXT)
    gpu = pl.coalesce([*[_text(g) for g in gpus], pl.when(names_gpu).then(device)])
    kept = {label: _text(label) for low, label in by_low.items() if not _dropped(low) and low not in DEVICE_LABELS}
    if devices:
        kept["device"] = pl.when(~names_gpu).then(device)
    parts = [pl.when(e.is_not_null()).then(pl.concat_str([pl.lit(f'{name}="'), _escaped(e), pl.lit('"')]))
             for name, e in sorted(kept.items())]
    name = pl.col("metric").cast(pl.Utf8).str.strip_chars().replace("", None)
    metric = name
    if parts:
        joined = pl.concat_list(parts).list.drop_nulls().list.join(",")
        bare = name.str.strip_suffix("{}")
        metric = (pl.when(name.is_null() | (joined == "")).then(name)
                  .when(bare.str.ends_with("}")).then(pl.concat_str([bare.str.strip_suffix("}"), pl.lit(","), joined,
                                                                     pl.lit("}")]))
                  .otherwise(pl.concat_str([bare, pl.lit("{"), joined, pl.lit("}")])))
    return {"host": host, "gpu": gpu, "resolved": metric}


def finish(picked: pl.DataFrame, no_metric: str = "empty metric") -> tuple[pl.DataFrame, pl.DataFrame]:
    """``picked``: line_no, time (text), time_t (parsed), host, metric, gpu (text), value (text)[, stale] ->
    (telemetry rows, the rejected rows with every input column and a 'reason')."""
    text = pl.col("value").cast(pl.Utf8).str.strip_chars()
    value = pl.col("value_f")
    stale = (pl.col("stale") if "stale" in picked.columns else pl.lit(False)).fill_null(False)
    gpu_given = pl.col("gpu").is_not_null() & (pl.col("gpu").str.strip_chars() != "")
    blank = pl.col("metric").str.starts_with("DCGM_") & (
        (value == _DCGM_BLANK_INT64) | value.is_between(_DCGM_BLANK_FP64, _DCGM_BLANK_FP64 + 3))
    gpus = picked.select(pl.col("gpu").unique().drop_nulls())["gpu"]  # a few distinct texts: the regex on those
    index = gpus.str.strip_chars().str.to_lowercase().str.extract(GPU_TEXT, 1).cast(pl.Int32, strict=False)
    # a Float64 value (Parquet) is its own reading: its text would read back as the same float
    value_f = pl.col("value") if picked.schema["value"] == pl.Float64 else text.cast(pl.Float64, strict=False)
    rows = picked.with_columns(value_f=value_f,
                               gpu_i=pl.col("gpu").replace_strict(gpus, index, default=None, return_dtype=pl.Int32))
    ok = (pl.col("time_t").is_not_null() & pl.col("host").is_not_null() & pl.col("metric").is_not_null()
          & value.is_finite().fill_null(False) & ~stale & ~blank.fill_null(False)
          & (~gpu_given | pl.col("gpu_i").is_not_null()))
    rows = rows.with_columns(ok=ok)
    kept = rows if rows["ok"].all() else rows.filter(pl.col("ok"))  # the usual file: every row, no copy
    good = kept.select(
        pl.col("time_t").alias("time"), "host", "metric", pl.col("gpu_i").alias("gpu"),
        pl.col("value_f").alias("value"), "line_no")
    reason = (  # for the few rejected rows only: formatting every row's reason costs more than the check
        pl.when(pl.col("time_t").is_null()).then(pl.format("unparseable time '{}'",
                                                           pl.col("time").cast(pl.Utf8).fill_null("")))
        .when(pl.col("host").is_null()).then(pl.lit("no host: no host, hostname, node or instance value, and the "
                                                     "file's name or folder names none"))
        .when(pl.col("metric").is_null()).then(pl.lit(no_metric))
        .when(value.is_null()).then(pl.format("non-numeric value '{}'", text.fill_null("")))
        .when(stale).then(pl.lit(STALE))
        .when(value.is_nan()).then(pl.lit("value is NaN (no reading)"))
        .when(value.is_infinite()).then(pl.format("value is {} (not a finite number)",
                                                  pl.when(value > 0).then(pl.lit("+Inf")).otherwise(pl.lit("-Inf"))))
        .when(blank).then(pl.format("DCGM blank value {}: the field is not supported, not found or not permitted "
                                    "on this GPU", text))
        .otherwise(pl.format("gpu '{}' is not an integer index", pl.col("gpu"))))
    bad = rows.filter(~pl.col("ok")).with_columns(reason=reason).drop("value_f", "gpu_i", "ok")
    return good, bad


def empty() -> pl.DataFrame:
    return pl.DataFrame(schema={"time": pl.Datetime("us"), "host": pl.Utf8, "metric": pl.Utf8,
                                "gpu": pl.Int32, "value": pl.Float64, "line_no": pl.Int64})
