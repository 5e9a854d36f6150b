"""Cabling map CSV -> ``topology``.

Header-led CSV (any column order/case): switch, port, host, hca. The port is
kept exactly as written ('Eth1/7', '1/1/7', 'swp7', '7') beside ``port_key``,
the same normalisation switch events get, which the engine joins on. hca is optional (NULL when
the map does not name the host adapter); so is ip, the host's fabric (IPoIB)
address that NCCL names peers by. A row without switch, port or host cannot
place a link and is rejected. One record per line: a quoted field never spans
lines, so two stray quotes cost their own two lines, not the hosts between them.

A file in /etc/hosts format (``address name [aliases...]``, ``#`` comments)
goes to ``host_addresses`` instead, one row per name: NCCL's peer addresses
are mapped to hosts through it (list the IPoIB address with the Slurm node name).
"""
from __future__ import annotations

import polars as pl

from analysis.ingest.contract import ParseContext, ParseResult
from analysis.ingest.lines import make_rejects
from analysis.ingest.parsers.csvlines import records_table, rejects_frame
from analysis.ingest.parsers.switch import normalize_port

ALIASES: dict[str, tuple[str, ...]] = {
    "switch": ("switch_name", "switchname", "leaf", "switch_host", "sw"),
    "port": ("switch_port", "switchport", "port_name", "interface", "sw_port"),
    "host": ("node", "hostname", "node_name", "server"),
    "hca": ("hca_port", "host_port", "device", "ca", "nic", "adapter"),
    "ip": ("ipoib", "ib_ip", "address", "ip_address", "addr"),
}
REQUIRED = ("switch", "port", "host")
COLUMNS = ["switch", "port", "host", "hca", "ip", "line_no"]
HOSTS_LINE = r"^\s*([0-9]{1,3}(?:\.[0-9]{1,3}){3}|[0-9A-Fa-f]*:[0-9A-Fa-f:.%\w]*)\s+(\S.*?)\s*(?:#.*)?$"


def parse(lines: pl.DataFrame, ctx: ParseContext) -> ParseResult:
    first = lines.filter(~pl.col("text").str.contains(r"^\s*(#|$)")).head(1)
    if first.height and first["text"].str.contains(HOSTS_LINE)[0]:
        return _hosts_file(lines)
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


def _hosts_file(lines: pl.DataFrame) -> ParseResult:
    """/etc/hosts: blank and comment lines skipped, a line without address and name rejected."""
    blank = pl.col("text").str.contains(r"^\s*(#|$)")
    body = lines.filter(~blank)
    parts = body.with_columns(m=pl.col("text").str.extract_groups(HOSTS_LINE))
    good = parts.filter(pl.col("m").struct.field("1").is_not_null())
    bad = parts.filter(pl.col("m").struct.field("1").is_null())
    rows = good.select("line_no", ip=pl.col("m").struct.field("1"),
                       host=pl.col("m").struct.field("2").str.replace_all(r"\s+", " ").str.split(" ")).explode("host")
    rows = rows.filter(pl.col("host") != "").select("ip", "host", "line_no")
    return ParseResult(tables={"host_addresses": rows},
                       rejects=make_rejects(bad["line_no"], bad["text"], ["not an 'address name' line"] * bad.height),
                       skipped=lines.height - body.height, format="hosts")
