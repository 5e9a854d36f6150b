"""InfiniBand port counters -> per-interval deltas -> node events.

Counters arrive as telemetry rows (under `network/` or `telemetry/`, long CSV or Parquet) named the
way node_exporter's infiniband collector names its counter series (``*_total``), with the port in
Prometheus labels: ``node_infiniband_symbol_error_total{device="mlx5_0",port="1"}`` (label order
free; without labels the series is the host's only port). They are cumulative, so each series
(host, device, port, counter) is differenced in time order:
  - a rise is the delta;
  - a fall is a reset (the driver reloaded, the port was re-initialised, the exporter restarted):
    the new reading is what accumulated since, never a negative count;
  - a 64-bit data counter that falls from near its maximum wrapped: the delta goes through 2^64;
  - the PMA error counters are narrow and *saturate* at their maximum (IBA spec: symbol errors and
    receive errors 16 bits, link recovery and link downed 8 bits, buffer overruns 4 bits): a series
    at its maximum adds nothing more, whatever it really counted;
  - a port that stops reporting and returns is differenced against its last reading (a reset while
    away reads as a fall, above);
  - the first reading of a series has no delta (what it counted before is not this window's).
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field

import polars as pl

PREFIX = "node_infiniband_"
# counter (node_exporter name without prefix/suffix) -> saturation value of the IB PMA counter
SATURATES = {"symbol_error": 2 ** 16 - 1, "port_receive_errors": 2 ** 16 - 1, "port_rcv_errors": 2 ** 16 - 1,
             "link_error_recovery": 2 ** 8 - 1, "link_downed": 2 ** 8 - 1,
             "excessive_buffer_overrun_errors": 2 ** 4 - 1, "excessive_buffer_overrun": 2 ** 4 - 1,
             "local_link_integrity_errors": 2 ** 4 - 1, "port_transmit_discards": 2 ** 16 - 1}
WRAP = 2 ** 64
# counters only: node_exporter names them *_total; gauges (info, rate, state) are not differenced
_SERIES = re.compile(r"^node_infiniband_(?P<name>[a-z0-9_]+?)_total(?:\{(?P<labels>[^}]*)\})?$")
_LABEL = re.compile(r'(\w+)="([^"]*)"')


@dataclass(frozen=True)
class PortThresholds:
    """Deltas that make a port event, within one interval between readings (per counter)."""
    warning: dict = field(default_factory=lambda: {"symbol_error": 10, "port_rcv_errors": 10,
                                                   "port_receive_errors": 10, "link_error_recovery": 1,
                                                   "excessive_buffer_overrun_errors": 1,
                                                   "excessive_buffer_overrun": 1,
                                                   "local_link_integrity_errors": 1})
    critical: dict = field(default_factory=lambda: {"link_downed": 1, "symbol_error": 1000})


def series(rows: pl.DataFrame) -> pl.DataFrame:
    """telemetry rows (time, host, metric, value) -> (time, host, device, port, counter, value) for the
    node_infiniband_* series; other metrics are left out."""
    ib = rows.filter(pl.col("metric").str.starts_with(PREFIX))
    parsed = ib.with_columns(m=pl.col("metric").str.extract_groups(_SERIES.pattern)).unnest("m")
    labels = pl.col("labels").fill_null("")
    return parsed.filter(pl.col("name").is_not_null()).select(
        "time", "host",
        device=labels.str.extract(r'device="([^"]*)"', 1).fill_null(""),
        port=labels.str.extract(r'port="([^"]*)"', 1).fill_null(""),
        counter=pl.col("name"), value="value")


def deltas(counters: pl.DataFrame) -> pl.DataFrame:
    """(time, host, device, port, counter, value) -> the same with prev_time and delta, per series in
    time order (see the module doc for resets, wraps and saturation); first readings dropped."""
    key = ["host", "device", "port", "counter"]
    sat = pl.col("counter").replace_strict(SATURATES, default=None, return_dtype=pl.Float64)
    s = counters.sort(*key, "time").with_columns(
        prev=pl.col("value").shift(1).over(key), prev_time=pl.col("time").shift(1).over(key))
    rise = pl.col("value") - pl.col("prev")
    wrapped = (pl.col("prev") > 0.5 * WRAP) & sat.is_null()
    delta = (pl.when(pl.col("prev").is_null()).then(None)
             .when(sat.is_not_null() & (pl.col("prev") >= sat)).then(0.0)  # saturated: nothing more is known
             .when(rise >= 0).then(rise)
             .when(wrapped).then(pl.col("value") + (WRAP - pl.col("prev")))
             .otherwise(pl.col("value")))  # reset: what accumulated since
    return s.with_columns(delta=delta).filter(pl.col("delta").is_not_null()).drop("prev")


def port_events(d: pl.DataFrame, topology: pl.DataFrame | None = None,
                thresholds: PortThresholds = PortThresholds()) -> pl.DataFrame:
    """Deltas over the thresholds -> node_events rows (source network, kind ib_port_errors, code = counter,
    device = <device>/<port>). A counter read on a switch (a host named in topology's switch column)
    lands on the compute host cabled to that port, reported by the switch."""
    warn = pl.col("counter").replace_strict(thresholds.warning, default=None, return_dtype=pl.Float64)
    crit = pl.col("counter").replace_strict(thresholds.critical, default=None, return_dtype=pl.Float64)
    hit = d.with_columns(
        severity=pl.when(crit.is_not_null() & (pl.col("delta") >= crit)).then(pl.lit("critical"))
        .when(warn.is_not_null() & (pl.col("delta") >= warn)).then(pl.lit("warning"))).filter(
        pl.col("severity").is_not_null())
    hit = hit.with_columns(reporter=pl.col("host"), on=pl.col("host"))
    if topology is not None and topology.height:
        cabled = topology.select(pl.col("switch").alias("reporter"), pl.col("port_key").alias("port"),
                                 pl.col("host").alias("cabled")).unique(["reporter", "port"])
        hit = hit.join(cabled, on=["reporter", "port"], how="left").with_columns(
            on=pl.coalesce("cabled", "on")).drop("cabled")
    return numbered(hit.sort("time", "on", "device", "port", "counter").select(
        event_time=pl.col("time"), host=pl.col("on"), source=pl.lit("network"), kind=pl.lit("ib_port_errors"),
        code=pl.col("counter"), severity="severity",
        message=pl.format("{} +{} on {}/{} in {} s", pl.col("counter"), pl.col("delta").cast(pl.Int64),
                          pl.col("device"), pl.col("port"),
                          (pl.col("time") - pl.col("prev_time")).dt.total_seconds()),
        device=pl.format("{}/{}", pl.col("device"), pl.col("port")), reporter="reporter",
        file=pl.lit("goodput:network-counters")))


def numbered(events: pl.DataFrame) -> pl.DataFrame:
    """Port events in time order, numbered 1.. (their line_no under file goodput:network-counters)."""
    return events.sort("event_time", "host", "device", "code", "reporter", "severity").with_columns(
        line_no=pl.int_range(1, pl.len() + 1, dtype=pl.Int64))
