"""Cabling map CSV -> ``topology``.

Header-led CSV (any column order/case): switch, port, host, hca. The port is
kept exactly as written ('Eth1/7', '1/1/7', 'swp7', '7') beside ``port_key``,
the same normalisation switch events get, which the engine joins on. hca is optional (NULL when
the map does not name the host adapter). A row without switch, port or host
cannot place a link and is rejected.
"""
from __future__ import annotations

import polars as pl

from analysis.model import ParseContext, ParseResult
from analysis.parsers.csvlines import records_table, rejects_frame
from analysis.parsers.switch import normalize_port

ALIASES: dict[str, tuple[str, ...]] = {
    "switch": ("switch_name", "switchname", "leaf", "switch_host", "sw"),
    "port": ("switch_port", "switchport", "port_name", "interface", "sw_port"),
    "host": ("node", "hostname", "node_name", "server"),
    "hca": ("hca_port", "host_port", "device", "ca", "nic", "adapter"),
}
REQUIRED = ("switch", "port", "host")
COLUMNS = ["switch", "port", "host", "hca", "line_no"]


def parse(lines: pl.DataFrame, ctx: ParseContext) -> ParseResult:
    table = records_table(lines, ALIASES, REQUIRED, "topology (cabling map)")
    missing = [pl.when(pl.col(c).is_null()).then(pl.lit(c)) for c in REQUIRED]
    rows = table.rows.with_columns(
        reason=pl.concat_str(missing, separator=", ", ignore_nulls=True))
    rows = rows.with_columns(
        reason=pl.when(pl.col("reason") != "").then(pl.format("empty {}", pl.col("reason"))))
    good = rows.filter(pl.col("reason").is_null()).select(COLUMNS).with_columns(
        port_key=normalize_port(pl.col("port")))  # the key switch events are matched on
    return ParseResult(
        tables={"topology": good},
        rejects=rejects_frame(table.rejects, rows.filter(pl.col("reason").is_not_null())),
        skipped=table.skipped, merged=table.merged, format="topology-csv")
