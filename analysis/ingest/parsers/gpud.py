"""gpud (leptonai/gpud) health states and events, the second shape node_health/ reads (node_health.py).

A line is one element of a ``/v1/states`` answer (``{component, states: [{time, name, health, reason, error,
suggested_actions: {description, repair_actions}}]}``) or of a ``/v1/events`` answer (``{component, startTime,
endTime, events: [{time, name, type, message}]}``): the answers are JSON arrays, saved one element a line
(``curl -s localhost:15132/v1/states | jq -c '.[]'``, docs/sources.md#node-health). A line may also hold one
state or event with its component. gpud writes no node name: the host is a ``nodeName``/``hostname`` field
when a collector adds one, else the file's name or folder. A state without a time takes the line's ``time``
(the collector's stamp); none at all: the line is a reject (a snapshot cannot be placed in time).

Rows: one per state or event. health Healthy -> 'ok', kind 'health_ok' (never blamed); Unhealthy with a repair
action REBOOT_SYSTEM or HARDWARE_INSPECTION -> 'critical', else 'warning'; Degraded -> 'warning' (gpud: the
workload is not affected); Initializing or IGNORE_NO_ACTION_REQUIRED -> 'info'. Event type Fatal/Critical ->
'critical', Warning -> 'warning', Info -> 'info'. An XID ('XID 79' in the reason or message of the xid
component) is kind 'xid', code the number, like kernel/ and NVSentinel's. Otherwise kind is the area of the
component and state name (node_health.AREAS, with 'accelerator-nvidia-' read as 'gpu-'), code the component.
"""
from __future__ import annotations

import polars as pl

from analysis.ingest.lines import make_rejects
from analysis.ingest.parsers import jsonlines
from analysis.ingest.timeutil import in_years, outside_years

KEYS = ("component", "states", "events", "name", "health", "type", "reason", "error", "suggested_actions",
        "hostname")  # read beside NVSentinel's fields (node_health._SCHEMA); nested values arrive as JSON text
_ITEM = {k: pl.Utf8 for k in ("component", "time", "name", "health", "type", "reason", "message", "error",
                              "suggested_actions")}
_SEVERE_ACTIONS = r"REBOOT_SYSTEM|HARDWARE_INSPECTION"


def _items(rows: pl.DataFrame) -> tuple[pl.DataFrame, pl.DataFrame]:
    """(row id, item JSON text) for each state or event of each line; lines whose states/events is no list."""
    listed = rows.filter(pl.col("list").is_not_null())
    wrapped = listed.select(line_no="rid", text=pl.concat_str(pl.lit('{"items": '), pl.col("list"), pl.lit("}")))
    decoded = jsonlines.decode(wrapped, schema={"items": pl.List(pl.Utf8)})
    exact = pl.DataFrame({"line_no": [no for no, _, _ in decoded.objects],
                          "items": [[jsonlines.as_text(x) for x in v["items"]] if isinstance(v.get("items"), list)
                                    else None for _, _, v in decoded.objects]},
                         schema={"line_no": pl.Int64, "items": pl.List(pl.Utf8)})
    lists = pl.concat([*[f.select("line_no", "items") for f in decoded.frames], exact]).rename({"line_no": "rid"})
    single = rows.filter(pl.col("list").is_null()).select("rid", items=pl.concat_list("text"))
    every = pl.concat([lists, single])
    not_list = rows.join(every.filter(pl.col("items").is_not_null()), on="rid", how="anti")
    return every.drop_nulls("items").explode("items").drop_nulls("items").rename({"items": "item"}), not_list


def events(rows: pl.DataFrame, areas, read_time) -> tuple[pl.DataFrame, pl.DataFrame, pl.Series]:
    """gpud lines (line_no, text, component, states, events, host, t_line: the line's own time read) ->
    (node_events rows, rejects, line_no of lines with nothing in them: an empty states/events list).
    ``areas(text expr)``: the kind of a component (node_health's); ``read_time(text expr)``: a time."""
    rows = rows.with_row_index("rid").with_columns(pl.col("rid").cast(pl.Int64),
                                                   list=pl.coalesce("states", "events"))
    items, not_list = _items(rows)
    items = items.with_row_index("iid").with_columns(pl.col("iid").cast(pl.Int64))
    decoded = jsonlines.decode(items.select(line_no="iid", text="item"), schema=_ITEM)
    exact = pl.DataFrame({"line_no": [no for no, _, _ in decoded.objects],
                          **{k: [jsonlines.as_text(o.get(k)) for _, _, o in decoded.objects] for k in _ITEM}},
                         schema={"line_no": pl.Int64, **_ITEM})
    fields = pl.concat([*[f.select("line_no", *_ITEM) for f in decoded.frames], exact]).rename({"line_no": "iid"})
    g = (items.join(fields, on="iid", how="left", suffix="_item")
         .join(rows.select("rid", "line_no", "text", "host", "t_line", line_component="component"), on="rid"))
    actions = pl.col("suggested_actions").str.json_path_match("$.repair_actions").fill_null("") \
        .str.extract_all(r"[A-Z][A-Z_]+").list.join(",")
    g = g.with_columns(component=pl.coalesce(pl.col("component").replace("", None), "line_component"),
                       actions=actions.replace("", None), said_text=pl.coalesce("reason", "message", "error"))
    g = g.with_columns(t=pl.coalesce(read_time(pl.col("time").replace("", None)), "t_line"))
    why = (pl.when(pl.col("item").is_null() | pl.col("iid").is_in(decoded.rejects["line_no"].implode()))
           .then(pl.lit("gpud state or event that is not a JSON object"))
           .when(pl.col("t").is_null())
           .then(pl.lit("gpud state or event without a readable time (and none on the line)"))
           .when(~in_years(pl.col("t"))).then(outside_years(pl.col("t")))
           .when(pl.col("host").is_null()).then(pl.lit("gpud names no node: no nodeName/hostname field and no host "
                                                      "in the file name")))
    g = g.with_columns(why=why)
    bad_lines = g.filter(pl.col("why").is_not_null()).group_by("line_no").agg(pl.first("text"), pl.first("why"))
    bad_lines = pl.concat([bad_lines, not_list.select(
        "line_no", "text", why=pl.lit("gpud 'states' or 'events' that is not a list"))])
    good = g.join(bad_lines.select("line_no"), on="line_no", how="anti")
    empty = rows.join(g.select("line_no").unique(), on="line_no", how="anti").join(
        bad_lines.select("line_no"), on="line_no", how="anti")["line_no"]
    return _rows(good, areas), make_rejects(bad_lines["line_no"], bad_lines["text"], bad_lines["why"]), empty


def _rows(g: pl.DataFrame, areas) -> pl.DataFrame:
    health, kind_of = pl.col("health").str.to_lowercase(), pl.col("type").str.to_lowercase()
    severe = pl.col("actions").fill_null("").str.contains(_SEVERE_ACTIONS)
    ignore = pl.col("actions").fill_null("").str.contains("IGNORE_NO_ACTION_REQUIRED")
    severity = (pl.when(health == "healthy").then(pl.lit("ok"))
                .when(ignore | (health == "initializing")).then(pl.lit("info"))
                .when(health == "unhealthy").then(pl.when(severe).then(pl.lit("critical")).otherwise(pl.lit("warning")))
                .when(health == "degraded").then(pl.lit("warning"))
                .when(kind_of.is_in(["fatal", "critical"])).then(pl.lit("critical"))
                .when(kind_of == "warning").then(pl.lit("warning"))
                .otherwise(pl.lit("info")))
    said = pl.concat_str(pl.col("component").fill_null(""), pl.col("name").fill_null(""), separator=" ") \
        .str.to_lowercase().str.replace_all("accelerator-nvidia-", "gpu-")
    xid = pl.col("said_text").str.extract(r"(?i)\bXID\s*(\d{1,3})\b", 1)
    is_xid = said.str.contains(r"(?:^|[^s])xid") & xid.is_not_null()
    pci = pl.col("said_text").str.extract(r"(?:PCI:)?([0-9a-fA-F]{4}:[0-9a-fA-F]{2}:[0-9a-fA-F]{2})", 1) \
        .str.to_lowercase()
    g = g.with_columns(severity=severity, area=areas(said), is_xid=is_xid, xid=xid, device=pci)
    def part(col: str, form: str) -> pl.Expr:
        return pl.when(pl.col(col).is_not_null()).then(pl.format(form, pl.col(col))).otherwise(pl.lit(""))

    note = pl.concat_str(pl.format(" [component {}", pl.col("component").fill_null("?")), part("name", "; {}"),
                         pl.format("; {}", pl.coalesce("health", "type").fill_null("?")),
                         part("actions", "; repair_actions {}"), pl.lit("]"))
    return g.select(
        pl.col("t").alias("event_time"), "host", pl.lit("node_health").alias("source"),
        kind=pl.when(pl.col("severity") == "ok").then(pl.lit("health_ok"))
        .when(pl.col("is_xid")).then(pl.lit("xid")).otherwise(pl.col("area")),
        code=pl.when(pl.col("is_xid") & (pl.col("severity") != "ok")).then(pl.col("xid").cast(pl.Int64).cast(pl.Utf8))
        .otherwise(pl.col("component")),
        severity="severity", message=pl.col("said_text").fill_null(pl.col("component")) + note, device="device",
        reporter=pl.lit("gpud"), line_no="line_no")
