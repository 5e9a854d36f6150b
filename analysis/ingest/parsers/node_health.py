"""Node health events (Kubernetes GPU clusters) -> ``node_events`` (source 'node_health').

Read: NVIDIA NVSentinel ``HealthEvent`` records (data-models/protobufs/health_event.proto) as JSON lines, flat
or wrapped as structured-mode CloudEvents (``type`` com.nvidia.nvsentinel.health.v1, the event in
``data.healthEvent``; the ADR-012 design shape with the event directly in ``data`` too). Fields read:
nodeName, generatedTimestamp (RFC 3339 text or ``{seconds, nanos}``; a CloudEvent's ``time`` when absent),
agent, componentClass, checkName, isFatal, isHealthy, message, recommendedAction (the enum's number or NAME,
legacy platformconnector.proto names included), customRecommendedAction, errorCode (a list, or the legacy
single string), entitiesImpacted ([{entityType, entityValue}]), gpuUUID.

Rows: one per line, except an XID event: one row per XID its errorCode names, kind 'xid' and code the number,
so the XID table (taxonomy/xids.yaml) classifies it as it does a dmesg 'NVRM: Xid' line. Other events: kind
from the check name and component (AREAS below: the taxonomy's node_health rules key on it), code the check
name. Event severity: isHealthy -> 'ok' with kind 'health_ok' (a recovery: no rule blames it); isFatal ->
'critical'; an unfatal event NVSentinel asks nothing for (recommendedAction NONE: 99 % of a fleet's events)
-> 'info' (recorded, never blamed); else 'warning'. The recommended action, error codes and check name are
kept in the message, which operators see in `goodput why`. device: the impacted GPU's PCI address written
as kernel.py writes it, else its UUID, else 'GPU<index>'. host: nodeName, else the file's host (its name or
folder); none -> reject.

gpud (leptonai/gpud) /v1/states and /v1/events elements, one a line, are read by gpud.py into the same rows;
Kubernetes Events about nodes (node-problem-detector's, through an event exporter) by npd.py; kube-state-metrics'
``kube_node_status_condition`` (a Prometheus range-query answer, or a text scrape) by ksm.py, an event where a
condition changes. Those files are told by their first lines and read alone, not in a batch: a range-query
answer is one JSON document of records (json_parts), and a scrape's changes need its samples in order.

Every line: a row (or rows), a reject (bad JSON, no time, unparseable or out-of-range time, no host, not a
health event), or skipped (blank, a gpud element with no states, an Event about no node).
"""
from __future__ import annotations

from collections.abc import Iterable, Iterator
from itertools import chain

import polars as pl

from analysis.ingest.contract import ParseContext, ParseResult
from analysis.ingest.lines import LineStream, make_rejects
from analysis.ingest.parsers import batched, gpud, jsonlines, ksm, npd
from analysis.ingest.parsers.csvlines import parse_time_any
from analysis.ingest.parts import each_piece
from analysis.ingest.timeutil import in_years, outside_years

FIELDS = ("agent", "componentClass", "checkName", "isFatal", "isHealthy", "message", "recommendedAction",
          "customRecommendedAction", "errorCode", "entitiesImpacted", "generatedTimestamp", "nodeName", "gpuUUID")
# every key any shape reads, as text: nested values arrive as their JSON text
_SCHEMA = {k: pl.Utf8 for k in dict.fromkeys((*FIELDS, "type", "time", "data", *gpud.KEYS, *npd.KEYS))}
EVENTS = ["event_time", "host", "source", "kind", "code", "severity", "message", "device", "reporter", "line_no"]

# RecommendedAction numbers (health_event.proto), and the legacy platformconnector.proto ones it dropped
ACTIONS = {"0": "NONE", "1": "NODE_REBOOT", "2": "COMPONENT_RESET", "3": "COMPONENT_REPLACEMENT",
           "4": "APPLICATION_RESTART", "5": "CONTACT_SUPPORT", "6": "RUN_FIELDDIAG", "15": "RESTART_VM",
           "24": "RESTART_BM", "25": "REPLACE_VM", "26": "RUN_DCGMEUD", "27": "CUSTOM", "28": "REMEDIATE",
           "99": "UNKNOWN"}

# (kind, regex over "checkName componentClass"), first match wins: the taxonomy's node_health rules
# (taxonomy/rules.yaml) give each kind its cause. Services come before fabric: Fabric Manager down is a
# service down (NVSentinel: FabricManagerServiceDown), a fabric state unhealthy is the NVLink fabric.
AREAS = (
    ("gpu_lost", r"fallen.?off|off.?the.?bus|gpu.?lost|gpu.?missing|gpu.?count"),
    ("oom", r"\boom|out.?of.?memory"),  # node-problem-detector's OOMKilling: the job's own doing
    ("services", r"service|daemon|persistenced|kubelet|containerd|runtime|driver.?not|fabric.?manager"),
    ("nvlink", r"nvlink|nvswitch|fabric|sxid"),
    ("gpu_memory", r"(?:gpu|dcgm).*(?:mem|ecc|dbe|sbe|remap|retire)|(?:ecc|dbe|remap|retire).*gpu|^gpu(?:mem|ecc)"),
    ("host_memory", r"dimm|edac|\bmce\b|machine.?check|^(?:mem|memory)\b|\bmemory\b"),
    ("pcie", r"pcie|\bpci\b"),
    ("thermal", r"therm|temp|cooling|fan"),
    ("power", r"power|psu|voltage"),
    ("network", r"infiniband|\bib\b|\bnic\b|network|ethernet|\blink\b|\bhca\b|rdma|netdev"),
    ("filesystem", r"filesystem|file.?system|mount|nfs|lustre|disk|nvme|storage|read.?only|xfs|ext4"),
    ("os_kernel", r"kernel|oops|panic|hung|lockup|\bsyslog|^os\b"),  # gpud: component os
    ("maintenance", r"maintenance"),
    ("gpu", r"\bgpu|dcgm|inforom|clock|xid"),
)
_XID_CODE = r"(?i)^\s*(?:xid[_ ]?)?(\d{1,3})\s*$"
_PCI = r"[0-9a-fA-F]{4}:[0-9a-fA-F]{2}:[0-9a-fA-F]{2}(?:\.[0-7])?|^[0-9a-fA-F]{2}:[0-9a-fA-F]{2}(?:\.[0-7])?"

NOT_NODE_HEALTH = ("not node-health output: expected NVSentinel HealthEvent JSON lines (nodeName, checkName, "
                   "generatedTimestamp, ...), CloudEvents of type com.nvidia.nvsentinel.health.v1, or gpud "
                   "/v1/states or /v1/events elements one a line (component, states/events), or "
                   "Kubernetes Events (involvedObject) from an event exporter")


def stream_parts(chunks: Iterable[pl.DataFrame], ctx: ParseContext) -> Iterator[ParseResult]:
    """A large file piece by piece (analysis/ingest/parts.py): each line is an event of its own, except in a
    kube-state-metrics scrape (ksm.py: what a condition was in the pieces before is kept in ctx.state)."""
    chunks = iter(chunks)
    first = next(chunks, None)
    if first is None:
        return
    pieces = chain([first], chunks)
    if _shape(first) == "scrape":
        return (_scrape(piece, ctx) for piece in pieces)
    return each_piece(parse, pieces, ctx)


def json_parts(chunks: Iterable[bytes], ctx: ParseContext) -> Iterator[ParseResult]:
    """A file that starts with '{' (the engine hands those over as one JSON document): a Prometheus range-query
    answer (ksm.py), else JSON lines, read line by line as any node-health file (the line reader's rules: its
    over-long lines, control characters, cut-off gzip end are refused as they are for stream_parts)."""
    head, chunks = ksm.head_chunks(chunks)
    if ksm.is_answer(head):
        yield from ksm.json_parts(chunks, ctx, _area)
        return
    from analysis.ingest.one_file import PIECE_BYTES  # the engine's piece size (one_file imports the parsers)

    opts = ctx.options
    stream, done = LineStream(ctx.path, opts.max_line_bytes, opts.max_file_bytes, PIECE_BYTES), 0
    for part in stream_parts(stream.frames(), ctx):
        refused = stream.rejects.filter(pl.col("line_no").is_between(done + 1, stream.n_lines))
        part.rejects = pl.concat([part.rejects, refused]).sort("line_no")
        part.records, done = stream.n_lines - done, stream.n_lines
        yield part
    # the lines of a last piece the line reader refused whole, and its notes (invalid UTF-8, ...)
    yield ParseResult(tables={}, rejects=stream.rejects.filter(pl.col("line_no") > done),
                      records=stream.n_lines - done, problems=stream.problems)


def parse(lines: pl.DataFrame, ctx: ParseContext) -> ParseResult:
    if _shape(lines) == "scrape":
        return _scrape(lines, ctx)
    return batched.single(parse_batch(batched.numbered(lines), [ctx]))


def _shape(lines: pl.DataFrame) -> str | None:
    """'scrape' (kube-state-metrics text), 'answer' (a Prometheus API answer) or None (JSON lines), by the first
    non-blank lines (a collector's date line may come first)."""
    head = lines.filter(pl.col("text").str.strip_chars() != "").head(3)["text"]
    if head.len() and ksm.is_answer("\n".join(head)):
        return "answer"
    metric = head.str.extract(ksm.SAMPLE, 1).str.starts_with("kube_")
    return "scrape" if (head.str.contains(ksm.HEAD) | metric.fill_null(False)).any() else None


def _scrape(lines: pl.DataFrame, ctx: ParseContext) -> ParseResult:
    blank = lines["text"].str.strip_chars() == ""
    samples, rejects, skipped = ksm.text_samples(lines.filter(~blank), ctx)
    events, repeated = ksm.changes(samples, ctx, _area)
    notes = [f"{n} lines: {why}" for why, n in skipped.items() if n and why == ksm.OTHER_SERIES]
    return ParseResult(tables={"node_events": events}, rejects=rejects, format="kube-state-metrics-text",
                       skipped=int(blank.sum()) + sum(skipped.values()) + repeated, problems=notes)


def parse_batch(lines: pl.DataFrame, ctxs: list[ParseContext]) -> batched.BatchResult:
    """Many node-health files at once (analysis.ingest.parsers.batched). kube-state-metrics files are left to
    be read alone (the module's docstring)."""
    blank = pl.col("text").str.strip_chars() == ""
    heads = lines.filter(~blank).group_by("fid", maintain_order=True).head(3)
    alone = {fid: f"kube-state-metrics {shape}: read alone, not in a batch"
             for (fid,), part in heads.group_by("fid") if (shape := _shape(part))}
    if alone:
        lines = lines.filter(~pl.col("fid").is_in(list(alone)))
    skipped = batched.counts(lines.filter(blank)["fid"])
    part = lines.filter(~blank).select("fid", "line_no", "text")
    rows, rejects, empty = _read(part, ctxs)
    empty = batched.counts(batched.fid_of(empty))
    n_lines, n_bad = batched.counts(part["fid"]), batched.counts(batched.fid_of(rejects["line_no"]))
    # a file whose every line is refused and none even looks like a health event is a wrong folder, not rejects
    looks = batched.counts(part.filter(pl.col("text").str.contains(
        r'"(?:checkName|healthEvent|nodeName|component|involvedObject)"'))["fid"])
    unrecognised = {fid: NOT_NODE_HEALTH for fid, n in n_lines.items() if n_bad.get(fid, 0) == n and not looks.get(fid)}
    unrecognised.update(alone)
    return batched.BatchResult(tables={"node_events": rows}, rejects=rejects,
                               skipped={fid: skipped.get(fid, 0) + empty.get(fid, 0) for fid in range(len(ctxs))},
                               formats={fid: "node-health-jsonl" for fid in n_lines}, unrecognised=unrecognised)


def _frame(decoded: jsonlines.Decoded, schema: dict) -> pl.DataFrame:
    """The decoded blocks and the lines json.loads read, as one frame of (line_no, one text column per key)."""
    exact = pl.DataFrame({"line_no": [no for no, _, _ in decoded.objects],
                          **{k: [jsonlines.as_text(obj.get(k)) for _, _, obj in decoded.objects] for k in schema}},
                         schema={"line_no": pl.Int64, **schema})
    return pl.concat([*[f.select("line_no", *schema) for f in decoded.frames], exact]).sort("line_no")


def _decoded(part: pl.DataFrame) -> tuple[pl.DataFrame, pl.DataFrame]:
    """(line_no, text, one text column per HealthEvent field), rejects: decoded in bulk (jsonlines). A
    CloudEvent's event (data.healthEvent, or data itself in the ADR-012 design shape) is decoded in a second
    bulk pass, not field by field: a JSON path query per field read all of data again for each (5x slower)."""
    decoded = jsonlines.decode(part.select("line_no", "text"), schema=_SCHEMA)
    values = _frame(decoded, _SCHEMA)
    wrapped = values.filter(pl.col("data").is_not_null()).select(
        "line_no", text=pl.coalesce(pl.col("data").str.json_path_match("$.healthEvent"), pl.col("data")))
    schema = {k: pl.Utf8 for k in FIELDS}
    inner = _frame(jsonlines.decode(wrapped, schema=schema), schema)  # its rejects: no fields, refused in _read
    values = values.join(inner, on="line_no", how="left", suffix="_inner").with_columns(
        **{k: pl.coalesce(pl.col(k).replace("", None), pl.col(f"{k}_inner").replace("", None)) for k in FIELDS})
    return values.drop(f"{k}_inner" for k in FIELDS).join(part, on="line_no", how="left"), decoded.rejects


def _time(text: pl.Expr, tz: str) -> pl.Expr:
    """RFC 3339 text, or protobuf's {seconds, nanos} as Go's encoding/json writes a Timestamp."""
    seconds = text.str.json_path_match("$.seconds").cast(pl.Int64, strict=False)
    nanos = text.str.json_path_match("$.nanos").cast(pl.Int64, strict=False).fill_null(0)
    from_pb = pl.from_epoch(seconds * 1_000_000 + nanos // 1000, time_unit="us")
    return pl.when(text.str.starts_with("{")).then(from_pb).otherwise(parse_time_any(text, tz))


def _entity(kind: str) -> pl.Expr:
    """The value of the first impacted entity of this entityType (NVSentinel writes entityType first)."""
    return pl.col("entities").str.extract(rf'"entityType":\s*"{kind}"\s*,\s*"entityValue":\s*"([^"]*)"', 1)


def _device() -> pl.Expr:
    pci = pl.coalesce(_entity("PCI"), pl.col("entities").str.extract(rf"({_PCI})", 1))
    pci = pci.str.strip_chars().str.to_lowercase().str.replace(r"\.[0-7]$", "")
    pci = pl.when(pci.str.count_matches(":") == 1).then(pl.lit("0000:") + pci).otherwise(pci)
    return pl.coalesce(pci, _entity("GPU_UUID"), pl.col("gpuUUID"), pl.lit("GPU") + _entity("GPU"))


def _read(part: pl.DataFrame, ctxs: list[ParseContext]) -> tuple[pl.DataFrame, pl.DataFrame, pl.Series]:
    """node_events rows, rejects, and the lines skipped: a gpud element with no states, a Kubernetes Event
    about something else than a node."""
    values, bad_json = _decoded(part)
    tz = ctxs[0].options.tz
    hint = batched.per_file([c.host_hint for c in ctxs], pl.Utf8)
    # gpud: a component and no NVSentinel check (gpud.py)
    nvsentinel = pl.col("checkName").is_not_null() | pl.col("componentClass").is_not_null()
    is_gpud = pl.col("component").is_not_null() & ~nvsentinel
    # Kubernetes Events (npd.py): an involvedObject
    is_k8s_event = pl.col("involvedObject").is_not_null() & ~nvsentinel & ~is_gpud
    k_rows, k_bad, other = npd.events(values.filter(is_k8s_event), _area, lambda text: _time(text, tz))
    g_rows, g_bad, empty = gpud.events(
        values.filter(is_gpud).with_columns(host=pl.coalesce("nodeName", "hostname", hint),
                                            t_line=_time(pl.col("time").replace("", None), tz)),
        _area, lambda text: _time(text, tz))
    values = values.filter(~is_gpud & ~is_k8s_event)
    f = values.with_columns(
        stamp=pl.coalesce("generatedTimestamp", pl.col("time").replace("", None)),
        entities=pl.col("entitiesImpacted").fill_null(""),
        host=pl.coalesce("nodeName", batched.per_file([c.host_hint for c in ctxs], pl.Utf8)))
    f = f.with_columns(t=_time(pl.col("stamp"), tz))
    is_event = pl.col("checkName").is_not_null() | pl.col("componentClass").is_not_null()
    why = (pl.when(~is_event).then(pl.lit("not a health event: no checkName or componentClass "
                                          "(flat, or in a CloudEvent's data.healthEvent)"))
           .when(pl.col("stamp").is_null()).then(pl.lit("no time (generatedTimestamp, or a CloudEvent's time)"))
           .when(pl.col("t").is_null()).then(pl.format("unparseable time '{}'", pl.col("stamp")))
           .when(~in_years(pl.col("t"))).then(outside_years(pl.col("t"), pl.col("stamp")))
           .when(pl.col("host").is_null()).then(pl.lit("no nodeName and no host in the file name")))
    f = f.with_columns(why=why)
    bad = f.filter(pl.col("why").is_not_null())
    rejects = pl.concat([bad_json, g_bad, k_bad, make_rejects(bad["line_no"], bad["text"], bad["why"])]).sort("line_no")
    rows = pl.concat([_events(f.filter(pl.col("why").is_null())), g_rows, k_rows]).sort("line_no")
    return rows, rejects, pl.concat([empty, other])


def _area(said: pl.Expr) -> pl.Expr:
    """The kind of a check or component's lowercased words (AREAS, first match), else 'other'."""
    area = pl.lit("other")
    for kind, rx in reversed(AREAS):
        area = pl.when(said.str.contains(rx)).then(pl.lit(kind)).otherwise(area)
    return area


def _events(good: pl.DataFrame) -> pl.DataFrame:
    code_text = pl.col("errorCode").fill_null("")
    # a list's JSON text -> its items; the legacy single string -> itself
    codes = (pl.when(code_text.str.starts_with("["))
             .then(code_text.str.extract_all(r'"[^"]*"|[^\s,\[\]"]+').list.eval(pl.element().str.strip_chars('"')))
             .otherwise(pl.concat_list(code_text)).list.eval(pl.element().filter(pl.element() != "")))
    action = pl.col("recommendedAction").str.strip_chars().str.to_uppercase()
    action = action.replace(ACTIONS)
    action = pl.when((action == "CUSTOM") & pl.col("customRecommendedAction").is_not_null()).then(
        pl.format("CUSTOM {}", pl.col("customRecommendedAction"))).otherwise(action)
    healthy, fatal = pl.col("isHealthy").str.to_lowercase() == "true", pl.col("isFatal").str.to_lowercase() == "true"
    # the agent's name says where it looks, not what it found (system-services-monitor reports fabric states)
    # CamelCase names as words: NVSentinel's SysLogsXIDError is an XID check, SysLogsSXIDError an NVSwitch SXID one
    said = pl.concat_str(pl.col("checkName").fill_null(""), pl.col("componentClass").fill_null(""), separator=" ") \
        .str.replace_all(r"([a-z0-9])([A-Z])", "$1 $2").str.replace_all(r"([A-Z]+)([A-Z][a-z])", "$1 $2").str.to_lowercase()
    area = _area(said)
    g = good.with_columns(codes=codes, action=action, healthy=healthy.fill_null(False), fatal=fatal.fill_null(False),
                          area=area, said=said, device=_device())
    g = g.with_columns(
        severity=pl.when(pl.col("healthy")).then(pl.lit("ok")).when(pl.col("fatal")).then(pl.lit("critical"))
        .when(pl.col("action").fill_null("NONE").is_in(["NONE", "UNKNOWN"])).then(pl.lit("info"))
        .otherwise(pl.lit("warning")),
        message=pl.concat_str(
            pl.col("message").fill_null(pl.col("checkName")),
            pl.format(" [check {}", pl.col("checkName").fill_null("?")),
            pl.when(pl.col("action").is_not_null()).then(pl.format("; action {}", pl.col("action")))
            .otherwise(pl.lit("")),
            pl.when(pl.col("codes").list.len() > 0).then(pl.format("; errorCode {}", pl.col("codes").list.join(",")))
            .otherwise(pl.lit("")),
            pl.when(pl.col("agent").is_not_null()).then(pl.format("; agent {}", pl.col("agent"))).otherwise(pl.lit("")),
            pl.lit("]")))
    # XID events: one row per XID in errorCode (an XID check or an 'XID_79' code), kind 'xid' like kernel.py's
    is_xid = (pl.col("said") + pl.lit(" ") + pl.col("agent").fill_null("").str.to_lowercase()).str.contains(
        r"(?:^|[^a-z])xid")
    xid = g.with_columns(xid=pl.col("codes").list.eval(
        pl.element().str.extract(_XID_CODE, 1).filter(pl.element().is_not_null()))) \
        .with_columns(xid=pl.when(is_xid | pl.col("errorCode").str.contains(r"(?i)xid")).then(pl.col("xid")))
    xid = xid.with_columns(xid=pl.when(pl.col("xid").list.len() > 0).then(pl.col("xid")))
    # NVSentinel's SysLogsSXIDError (NVSwitch SXIDs: errorCode the number) as kernel.py's 'sxid' rows, and its
    # SysLogsGPUFallenOff as the XID 79 kernel.py makes of the same "has fallen off the bus" line: the rules and
    # the twin check (a kernel line and the agent's copy of it) then treat both sources alike
    is_sxid = pl.col("said").str.contains(r"(?:^|[^a-z])sxid")
    fallen = pl.col("said").str.contains(r"fallen off")
    xid = xid.with_columns(
        sxid=pl.when(is_sxid & pl.col("xid").is_null()).then(pl.col("codes").list.eval(
            pl.element().str.extract(r"(?i)^\s*(?:sxid[_ ]?)?(\d{1,6})\s*$", 1).filter(pl.element().is_not_null()))),
        xid=pl.when(fallen & pl.col("xid").is_null() & ~is_sxid).then(pl.lit(["79"])).otherwise(pl.col("xid")))
    xid = xid.with_columns(sxid=pl.when(pl.col("sxid").list.len() > 0).then(pl.col("sxid")))
    xids = xid.filter(pl.col("xid").is_not_null() & ~pl.col("healthy")).explode("xid").with_columns(
        kind=pl.lit("xid"), code=pl.col("xid").cast(pl.Int64).cast(pl.Utf8))
    sxids = xid.filter(pl.col("xid").is_null() & pl.col("sxid").is_not_null() & ~pl.col("healthy")).explode(
        "sxid").with_columns(kind=pl.lit("sxid"), code=pl.col("sxid").cast(pl.Int64).cast(pl.Utf8))
    rest = xid.filter((pl.col("xid").is_null() & pl.col("sxid").is_null()) | pl.col("healthy")).with_columns(
        kind=pl.when(pl.col("healthy")).then(pl.lit("health_ok")).otherwise(pl.col("area")), code=pl.col("checkName"))
    out = pl.concat([x.drop("xid", "sxid") for x in (xids, sxids, rest)]).sort("line_no")
    return out.select(pl.col("t").alias("event_time"), "host", pl.lit("node_health").alias("source"), "kind", "code",
                      "severity", "message", "device", pl.coalesce("agent", "host").alias("reporter"), "line_no")
