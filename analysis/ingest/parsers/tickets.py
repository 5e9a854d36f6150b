"""Repair tickets CSV -> ``tickets``.

Header-led CSV, columns in any order and any case: host, opened, closed,
component, resolution, optional ticket_id (or id). Ticket exports are small and
their free-text resolution is often quoted (commas, even newlines), so the csv
module reads them whole (see csvlines.csv_records); a record spanning several
lines is stored on its first line and the rest count as merged.

* empty closed -> NULL: the ticket is still open;
* empty host, or opened missing/unparseable -> reject (a ticket that cannot be
  placed on a node and in time is useless to the analysis);
* closed written but unparseable -> reject too: storing NULL would silently
  turn a closed ticket into an open one.

Each ticket is also a node event (source ``ticket``, kind ``ticket``, at its opening; code the component,
message "component: resolution"): the operator's words are classified by the taxonomy's reason rules
(taxonomy/reasons.yaml) like a drain reason, so a ticket names a cause and can be a node's incident.
"""
from __future__ import annotations

import polars as pl

from analysis.ingest.contract import ParseContext, ParseResult
from analysis.ingest.parsers.csvlines import parse_time_any, records_table, rejects_frame

ALIASES: dict[str, tuple[str, ...]] = {
    "ticket_id": ("id", "ticket", "ticket_no", "ticket_number", "key"),
    "host": ("node", "hostname", "node_name", "nodename", "server"),
    "opened": ("open", "opened_at", "open_time", "created", "created_at", "start", "time_open"),
    "closed": ("close", "closed_at", "close_time", "resolved", "resolved_at", "end", "time_closed"),
    "component": ("part", "components", "category", "fru"),
    "resolution": ("action", "fix", "resolution_notes", "notes", "outcome"),
}
REQUIRED = ("host", "opened")
FREE_TEXT = ("resolution",)  # the one column whose quoted value may span lines (a note with newlines)
COLUMNS = ["ticket_id", "host", "opened", "closed", "component", "resolution", "line_no"]
EVENTS = ["event_time", "host", "source", "kind", "code", "severity", "message", "device", "reporter", "line_no"]


def parse(lines: pl.DataFrame, ctx: ParseContext) -> ParseResult:
    table = records_table(lines, ALIASES, REQUIRED, "repair tickets", free_text=FREE_TEXT)
    tz = ctx.options.tz
    rows = table.rows.with_columns(
        opened_t=parse_time_any(pl.col("opened"), tz), closed_t=parse_time_any(pl.col("closed"), tz))
    reason = (
        pl.when(pl.col("host").is_null()).then(pl.lit("empty host"))
        .when(pl.col("opened").is_null()).then(pl.lit("empty opened time"))
        .when(pl.col("opened_t").is_null()).then(pl.format("unparseable opened time '{}'", pl.col("opened")))
        .when(pl.col("closed").is_not_null() & pl.col("closed_t").is_null())
        .then(pl.format("unparseable closed time '{}'", pl.col("closed")))
    )
    rows = rows.with_columns(reason=reason)
    good = rows.filter(pl.col("reason").is_null()).select(
        "ticket_id", "host", pl.col("opened_t").alias("opened"), pl.col("closed_t").alias("closed"),
        "component", "resolution", "line_no")
    events = good.select(
        pl.col("opened").alias("event_time"), "host", pl.lit("ticket").alias("source"), pl.lit("ticket").alias("kind"),
        pl.col("component").alias("code"), pl.lit(None, pl.Utf8).alias("severity"),
        pl.concat_str([pl.col("component"), pl.col("resolution")], separator=": ", ignore_nulls=True).alias("message"),
        pl.lit(None, pl.Utf8).alias("device"), pl.col("ticket_id").alias("reporter"), "line_no")
    return ParseResult(
        tables={"tickets": good.select(COLUMNS), "node_events": events},
        rejects=rejects_frame(table.rejects, rows.filter(pl.col("reason").is_not_null())),
        skipped=table.skipped, merged=table.merged, format="tickets-csv")
