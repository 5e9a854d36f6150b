"""kube-state-metrics node conditions and cordons: the fourth shape node_health/ reads (node_health.py).

``kube_node_status_condition{node, condition, status="true|false|unknown"}`` is 1 on the status a Node
condition holds and 0 on the others: the kubelet's (Ready, MemoryPressure, DiskPressure, PIDPressure,
NetworkUnavailable) and node-problem-detector's (KernelDeadlock, ReadonlyFilesystem, custom GPU ones...).
Read from a Prometheus range-query answer (analysis/ingest/parsers/promjson.py reads it; the node label is
the host as series.py resolves it) or from a text scrape of kube-state-metrics (``text_samples``: the
sample's timestamp, else the last date line above it, a collector's ``date``, else a date in the file's
name, else its modification time, as network/'s perfquery snapshots).

Rows: one where a condition changes, not one a sample: a problem (Ready false or unknown: kind
'node_not_ready', severity critical; another condition true: the kind npd.py gives its name, severity
warning) or its end (kind 'health_ok', severity ok). A sample repeating the state before it is skipped, as
is a 0 sample (a status that does not hold) and an 'unknown' of a condition other than Ready (the node
controller marks them all unknown when a node stops reporting: its Ready says so). The first sample of a
condition is an event when it differs from what is known before it (the events of other files: a problem
may have begun before this file), healthy when nothing is. Files covering overlapping windows: a change
another file (stored, or read earlier in the batch) has recorded for the node and condition between this
file's sample before it and the one after it is that change seen twice (the two files' samples need not
fall at the same instants), and is skipped.

``kube_node_spec_unschedulable{node}`` (1 while the node is cordoned) is read as one more condition, code
'unschedulable', by the same rules: a cordon (kind 'cordon') and its end (kind 'uncordon'), both severity
info, which no taxonomy rule blames and no health verdict counts (an uncordon is not a check passing). They
are node states' cordons where no kubelet Node Event is collected (view k8s_node_states). Other
kube-state-metrics series (kube_node_spec_taint, kube_pod_*) are skipped, counted in the file's message.
"""
from __future__ import annotations

from collections.abc import Iterable, Iterator
from itertools import chain

import polars as pl

from analysis.ingest.contract import ParseContext, ParseResult
from analysis.ingest.lines import make_rejects
from analysis.ingest.parsers import promjson
from analysis.ingest.parsers.network import file_time, stamp_line
from analysis.ingest.parts import combine
from analysis.ingest.timeutil import in_years, outside_years

METRIC = "kube_node_status_condition"
UNSCHEDULABLE = "kube_node_spec_unschedulable"
CORDON = "unschedulable"  # its rows' code: the condition changes() reads it as (Kubernetes has none of that name)
ENDS = ["health_ok", "uncordon"]  # the kinds of a change back to normal (ksm_known_conditions.sql says so too)
REPORTER = "kube-state-metrics"  # node_events.reporter of these rows: what the look-up finds them by
UNWRITTEN = "node_health/ksm"  # ctx.unwritten's key: the condition events of the batch's files not yet stored
# the kubelet's own conditions: pressure is the workload's doing (MemoryPressure: the node ran short of memory,
# what nh-oom says of an OOM kill); NetworkUnavailable is the CNI's route not set up, not the fabric
KUBELET = {"MemoryPressure": "oom", "DiskPressure": "node_condition", "PIDPressure": "node_condition",
           "NetworkUnavailable": "node_condition"}
# a text exposition sample: name, {labels}, value, optional timestamp in ms (the text format 0.0.4)
SAMPLE = r"^\s*([a-zA-Z_:][a-zA-Z0-9_:]*)\s*(\{.*\})?\s+(\S+)(?:\s+(-?\d+))?\s*$"
HEAD = r"^\s*#\s*(?:HELP|TYPE)\s+kube_"
JSON_HEAD = r'^\s*\{\s*(?:"status"\s*:|"data"\s*:\s*\{\s*"result(?:Type)?"\s*:)'
OTHER_SERIES = ("other kube-state-metrics series skipped (only kube_node_status_condition and "
                "kube_node_spec_unschedulable are read: taints and pods are not node states)")
EVENTS = ["event_time", "host", "source", "kind", "code", "severity", "message", "device", "reporter", "line_no"]


def _label(name: str) -> pl.Expr:
    """A label's value in a ``{...}`` block (the text format's escapes undone)."""
    value = pl.col("labels").str.extract(rf'[{{,]\s*{name}\s*=\s*"((?:[^"\\]|\\.)*)"', 1)
    return value.str.replace_all(r'\\"', '"').str.replace_all(r"\\\\", "\\", literal=True)


def text_samples(lines: pl.DataFrame, ctx: ParseContext) -> tuple[pl.DataFrame, pl.DataFrame, dict[str, int]]:
    """A scrape's lines (line_no, text; blank ones taken out) -> (samples: line_no, t, host, condition,
    status, value; rejects; skipped lines by reason)."""
    text = pl.col("text")
    m = text.str.extract_groups(SAMPLE)
    f = lines.with_columns(stamp=stamp_line(text, ctx.options.tz),
                           name=m.struct.field("1"), labels=m.struct.field("2"), raw=m.struct.field("3"),
                           ms=m.struct.field("4").cast(pl.Int64, strict=False))
    f = f.with_columns(is_date=pl.col("stamp").is_not_null(),
                       t=pl.coalesce(pl.from_epoch(pl.col("ms"), time_unit="ms").cast(pl.Datetime("us")),
                                     pl.col("stamp").forward_fill(),
                                     pl.lit(ctx.state.get("ksm_stamp"), pl.Datetime("us")),  # a piece before
                                     pl.lit(file_time(ctx), pl.Datetime("us"))),
                       host=_label("node"), condition=_label("condition"), status=_label("status"))
    is_ours = pl.col("name").is_in([METRIC, UNSCHEDULABLE])
    why = (pl.when(pl.col("is_date")).then(pl.when(in_years(pl.col("stamp"))).then(None).otherwise(
        outside_years(pl.col("stamp"), text)))
        .when(text.str.strip_chars().str.starts_with("#")).then(None)
        .when(pl.col("name").is_null()).then(pl.lit("not a metric line: expected 'name{labels} value [timestamp]', "
                                                     "a # comment or a date line (cut off or garbled?)"))
        .when(~is_ours).then(None)
        .when(pl.col("raw").cast(pl.Float64, strict=False).is_null()).then(
            pl.format("non-numeric value '{}'", pl.col("raw")))
        .when(pl.col("host").replace("", None).is_null()).then(pl.format("{} without a node label", "name"))
        .when((pl.col("name") == METRIC) & pl.col("condition").replace("", None).is_null()).then(
            pl.lit(f"{METRIC} without a condition label"))
        .when(~in_years(pl.col("t"))).then(outside_years(pl.col("t"), pl.col("t").cast(pl.Utf8))))
    f = f.with_columns(why=why)
    last = f["stamp"].drop_nulls()
    if last.len():
        ctx.state["ksm_stamp"] = last[-1]
    bad = f.filter(pl.col("why").is_not_null())
    ok = f.filter(pl.col("why").is_null())
    skipped = {"comment or date lines": ok.filter(~pl.col("name").is_not_null() | pl.col("is_date")).height,
               OTHER_SERIES: ok.filter(pl.col("name").is_not_null() & ~pl.col("is_date") & ~is_ours).height}
    samples = _as_conditions(ok.filter(is_ours & ~pl.col("is_date")).select(
        "line_no", "t", "host", "name", "condition", "status", value=pl.col("raw").cast(pl.Float64)))
    return samples, make_rejects(bad["line_no"], bad["text"], bad["why"]), skipped


def is_answer(head: str) -> bool:
    """Whether a document's first characters are a Prometheus API answer's (not a JSON line of an event)."""
    return bool(pl.Series([head[:4096]]).str.contains(JSON_HEAD)[0])


def json_parts(chunks: Iterable[bytes], ctx: ParseContext, areas) -> Iterator[ParseResult]:
    """A range-query answer: promjson reads it (records: a sample each), then the changes are found over the
    whole answer (a node's statuses are several series, anywhere in it): one part."""
    read = combine(promjson.json_parts(chunks, ctx))
    rows = read.tables["telemetry"]
    condition = r'kube_node_status_condition\{(?:.*,)?condition="((?:[^"\\]|\\.)*)"'
    rows = rows.with_columns(name=pl.col("metric").str.extract(r"^([^{]*)", 1),
                             condition=pl.col("metric").str.extract(condition, 1),
                             status=pl.col("metric").str.extract(r'[{,]status="([^"]*)"', 1))
    ours = rows.filter(pl.col("name").is_in([METRIC, UNSCHEDULABLE]))
    unlabelled = (pl.col("name") == METRIC) & pl.col("condition").is_null()
    no_label = ours.filter(unlabelled)
    samples = _as_conditions(ours.filter(~unlabelled).select(
        "line_no", t="time", host="host", name="name", condition="condition", status="status", value="value"))
    events, skipped = changes(samples, ctx, areas)
    other = rows.height - ours.height
    notes = [f"{other} samples: {OTHER_SERIES}"] if other else []
    rejects = pl.concat([read.rejects, make_rejects(no_label["line_no"], no_label["metric"],
                                                    [f"{METRIC} without a condition label"] * no_label.height)])
    yield ParseResult(tables={"node_events": events}, rejects=rejects.sort("line_no"),
                      skipped=read.skipped + other + skipped, format="kube-state-metrics-json",
                      records=read.records, problems=[*read.problems, *notes])


def _as_conditions(samples: pl.DataFrame) -> pl.DataFrame:
    """Samples with their series' name -> (line_no, t, host, condition, status, value): a
    kube_node_spec_unschedulable sample as condition CORDON holding status "true" (1) or "false" (0); another
    value (NaN) holds none."""
    spec = pl.col("name") == UNSCHEDULABLE
    held = pl.when(pl.col("value") == 1).then(pl.lit("true")).when(pl.col("value") == 0).then(pl.lit("false"))
    return samples.select(
        "line_no", "t", "host",
        condition=pl.when(spec).then(pl.lit(CORDON)).otherwise("condition"),
        status=pl.when(spec).then(held).otherwise("status"),
        value=pl.when(spec).then(held.is_not_null().cast(pl.Float64)).otherwise("value"))


def condition_kind(condition: pl.Expr, areas) -> pl.Expr:
    """A problem condition's kind: the kubelet's by KUBELET, node-problem-detector's by npd.py's areas over its
    name (KernelDeadlock -> os_kernel, ReadonlyFilesystem -> filesystem); a name no area knows ->
    'node_condition', which no taxonomy rule blames by itself (an operator's rule may)."""
    area = areas(condition.str.to_lowercase())
    return (pl.when(condition.is_in(list(KUBELET))).then(condition.replace_strict(KUBELET, default=None))
            .when(area == "other").then(pl.lit("node_condition")).otherwise(area))


def changes(samples: pl.DataFrame, ctx: ParseContext, areas) -> tuple[pl.DataFrame, int]:
    """Samples (line_no, t, host, condition, status, value) of one file, or of its next piece (the last state
    of each condition in the pieces before kept in ctx.state) -> (node_events rows, the samples that make
    none). ``areas``: node_health._area."""
    status = pl.col("status").str.to_lowercase()
    ready = pl.col("condition") == "Ready"
    cordon = pl.col("condition") == CORDON
    held = samples.filter((pl.col("value") == 1) & (ready | (status != "unknown")))
    carry = ctx.state.get("ksm_last")  # line_no 0: no line of this piece
    held = pl.concat([x for x in (carry, held.select(carry.columns) if carry is not None else held)
                      if x is not None])
    held = held.sort("host", "condition", "t", "line_no").unique(["host", "condition", "t"], keep="first",
                                                                 maintain_order=True)
    ctx.state["ksm_last"] = held.group_by("host", "condition").last().with_columns(line_no=pl.lit(0, pl.Int64))
    s = held.with_columns(problem=pl.when(ready).then(status != "true").otherwise(status == "true"))
    by = ["host", "condition"]
    s = s.with_columns(t_prev=pl.col("t").shift(1).over(by), before=pl.col("problem").shift(1).over(by),
                       t_next=pl.col("t").shift(-1).over(by))
    s = s.with_columns(until=pl.coalesce("t_next", pl.col("t") + (pl.col("t") - pl.col("t_prev")), "t"))
    cand = s.filter((pl.col("line_no") > 0) & (pl.col("before").is_null() | (pl.col("problem") != pl.col("before"))))
    known = _known(cand, ctx)
    if known.height:  # the latest change another file recorded in (sample before, sample after]
        seen = cand.select("line_no", *by, "t_prev", "until").join(known, on=by).filter(
            (pl.col("event_time") <= pl.col("until"))
            & (pl.col("t_prev").is_null() | (pl.col("event_time") > pl.col("t_prev"))))
        seen = seen.sort("event_time").group_by("line_no").agg(known_problem=pl.col("problem").last())
        cand = cand.join(seen, on="line_no", how="left")
    else:
        cand = cand.with_columns(known_problem=pl.lit(None, pl.Boolean))
    # nothing known before a file's first sample: healthy
    cand = cand.filter(pl.col("problem") != pl.coalesce("known_problem", "before", pl.lit(False)))
    kind = (pl.when(cordon).then(pl.when(pl.col("problem")).then(pl.lit("cordon")).otherwise(pl.lit("uncordon")))
            .when(~pl.col("problem")).then(pl.lit("health_ok")).when(ready).then(pl.lit("node_not_ready"))
            .otherwise(condition_kind(pl.col("condition"), areas)))
    # the state before, in the series' own words: a cordon is no problem, so its earlier state is cordoned or not
    earlier = (pl.when(cordon).then(pl.when(pl.col("before")).then(pl.lit("cordoned")).otherwise(pl.lit("schedulable")))
               .otherwise(pl.when(pl.col("before")).then(pl.lit("a problem")).otherwise(pl.lit("healthy"))))
    was = pl.when(pl.col("before").is_null()).then(pl.lit("first sample of the file")).otherwise(pl.format(
        "was {} at {}", earlier, pl.col("t_prev").dt.strftime("%Y-%m-%dT%H:%M:%SZ")))
    events = cand.sort("line_no").select(
        pl.col("t").alias("event_time"), "host", pl.lit("node_health").alias("source"), kind=kind,
        code="condition",
        severity=pl.when(cordon).then(pl.lit("info")).when(~pl.col("problem")).then(pl.lit("ok"))
        .when(ready).then(pl.lit("critical")).otherwise(pl.lit("warning")),
        message=pl.when(cordon).then(pl.format(
            "node {} [{} {}; {}]", pl.when(pl.col("problem")).then(pl.lit("cordoned")).otherwise(pl.lit("uncordoned")),
            pl.lit(UNSCHEDULABLE), pl.when(pl.col("problem")).then(pl.lit(1)).otherwise(pl.lit(0)), was))
        .otherwise(pl.format("node condition {} is {} [{}; {}]", "condition", "status", pl.lit(METRIC), was)),
        device=pl.lit(None, pl.Utf8), reporter=pl.lit(REPORTER), line_no="line_no")
    _remember(events, ctx)
    return events, samples.height - events.height


def _known(cand: pl.DataFrame, ctx: ParseContext) -> pl.DataFrame:
    """(host, condition, event_time, problem) of the condition events other files hold: stored, or read
    earlier in this batch and not yet stored."""
    schema = {"host": pl.Utf8, "condition": pl.Utf8, "event_time": pl.Datetime("us"), "problem": pl.Boolean}
    keys = cand.group_by("host", "condition").agg(since=pl.col("t").min(), until=pl.col("until").max())
    found = [pl.DataFrame(schema=schema)]
    if ctx.look_up is not None and keys.height:
        stored = ctx.look_up("ingest/ksm_known_conditions", keys.rename({"condition": "code"}))
        found.append(stored.select(pl.col("host"), pl.col("code").alias("condition"),
                                   pl.col("event_time").cast(pl.Datetime("us")), pl.col("problem")))
    if ctx.unwritten is not None and UNWRITTEN in ctx.unwritten:
        mine = str(ctx.path)
        found.append(ctx.unwritten[UNWRITTEN].filter(pl.col("file") != mine).select(list(schema)))
    return pl.concat(found)


def _remember(events: pl.DataFrame, ctx: ParseContext) -> None:
    """This file's changes, for the batch's later files (they are not in the warehouse before it is written)."""
    if ctx.unwritten is None or not events.height:
        return
    mine = str(ctx.path)
    rows = events.select("host", pl.col("code").alias("condition"), "event_time",
                         problem=~pl.col("kind").is_in(ENDS), file=pl.lit(mine))
    before = ctx.unwritten.get(UNWRITTEN)
    if before is not None:
        before = before.filter(pl.col("file") != mine)  # a file read again (alone, after its batch failed)
    ctx.unwritten[UNWRITTEN] = pl.concat([x for x in (before, rows) if x is not None])


def head_chunks(chunks: Iterable[bytes], n: int = 4096) -> tuple[str, Iterator[bytes]]:
    """The first ``n`` bytes' text, and the chunks again from the start."""
    it, taken, size = iter(chunks), [], 0
    for chunk in it:
        taken.append(chunk)
        size += len(chunk)
        if size >= n:
            break
    return b"".join(taken)[:n].decode("utf-8", "replace"), chain(taken, it)
