"""Prometheus HTTP API answers saved as they come (``curl .../api/v1/query_range > x.json``), read without jq:
``{"status":"success","data":{"resultType":"matrix","result":[{"metric":{"__name__":...,"instance":...},
"values":[[<unix time>,"<value>"],...]},...]}}``; ``/api/v1/query`` answers (``vector``: one ``value``) too.
``__name__`` is the metric, the other labels go through analysis/ingest/parsers/series.py (host from instance,
Hostname, ...; gpu; the rest kept in the metric name); the time is Unix seconds (UTC).

Records, not lines: the text may be one line of 500 MB or jq-pretty over millions of lines, so a record
is one sample of one series (``[t, "v"]``), numbered from 1 in the document's order; that number is the
row's line_no. A result element that is no series (or does not decode), a native histogram sample, a
sample that is not ``[<number>, "<value>"]``, an answer with status "error" (Prometheus' errorType and
error in the reason) and a scalar or string result are one rejected record each; a series without
samples is one skipped record. Several answers in one file (a polling script appending one per line)
are read in turn. "warnings" and "infos" go to the file's message. A document cut off or invalid
part-way keeps the series before the break; the rest is one rejected record saying where. A file that
does not start as a Prometheus answer is unrecognised.

Bounded memory, no per-sample Python: the document is walked as a stream of the decompressed file
(analysis/ingest/parsers/promtext.py), which hands over the result array's elements as text, cut at the
boundaries between series. They are worked in blocks of about BLOCK_CHARS. An element of the plain
Prometheus shape (ELEMENT: labels, then float samples ``[<number>, "<value>"]`` or one value; it nests
4 levels at most) has its labels decoded by polars and its samples read by polars' CSV reader; any
other (another writer's numbers as values, keys in another order, histograms, broken text) goes through
json.loads with its depth guarded (jsonlines.decode), by the same rules. One element is at most
MAX_ELEMENT_CHARS (Prometheus returns at most 11,000 samples per series); the file as a whole is capped
by max_file_bytes. Measured: an 88 MB answer (400 series x 11,000 samples) reads in 8 s with a peak of
0.74 GB (0.47 GB for a quarter of it), growing with the rows kept, not the text.
"""
from __future__ import annotations

import json
import re
from collections.abc import Iterable, Iterator

import polars as pl

from analysis.ingest.contract import ParseContext, ParseResult, UnrecognisedFormat
from analysis.ingest.lines import RAW_CLIP, make_rejects
from analysis.ingest.parsers import jsonlines, series
from analysis.ingest.parsers.promtext import Broken, Text, answers
from analysis.ingest.parts import combine
from analysis.ingest.timeutil import in_years, outside_years

BLOCK_CHARS = 8 * 1024 * 1024
NO_NAME = ("series without __name__ (PromQL functions such as rate() drop it): export the metric itself, or "
           "name the result with label_replace(<query>, \"__name__\", \"<name>\", \"\", \"\")")
HISTOGRAM = "a native histogram sample, not a float: query a float series (e.g. histogram_quantile)"
_STR = r'"(?:[^"\\]|\\.)*"'
_NUM = r"-?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][+-]?[0-9]+)?"
_PAIR = rf'\[\s*{_NUM}\s*,\s*"[^"\\\s\[\],]*"\s*\]'  # a value: no blanks, quotes, commas or brackets
_LABELS = rf"\{{\s*(?:{_STR}\s*:\s*{_STR}\s*(?:,\s*{_STR}\s*:\s*{_STR}\s*)*)?\}}"
ELEMENT = (rf'^\s*\{{\s*"metric"\s*:\s*{_LABELS}\s*,\s*(?:"values"\s*:\s*\[\s*(?:{_PAIR}\s*(?:,\s*{_PAIR}\s*)*)?\]'
           rf'|"value"\s*:\s*{_PAIR})\s*\}}\s*$')
_HEAD = re.compile(rf'\s*\{{\s*"metric"\s*:\s*({_LABELS})\s*,\s*"(values?)"\s*:\s*')
_SAMPLES = {"eid": pl.Int64, "pos": pl.Int64, "t": pl.Utf8, "value": pl.Utf8, "why": pl.Utf8, "raw": pl.Utf8}


def parse_json(chunks: Iterable[bytes], ctx: ParseContext) -> ParseResult:
    return combine(json_parts(chunks, ctx))


def json_parts(chunks: Iterable[bytes], ctx: ParseContext) -> Iterator[ParseResult]:
    """The answer's records, a part for each block of series read (the engine writes each as it comes)."""
    text, out, n_answers = Text(chunks), _Rows(ctx), 0
    if text.peek() != "{":
        raise UnrecognisedFormat("not a Prometheus API answer: a JSON document that is not an object")
    try:
        for kind, item in answers(text):
            if kind == "elements":
                out.add(item)
            else:
                n_answers += 1
                if n_answers == 1 and not item.get("_result") and "status" not in item:
                    raise UnrecognisedFormat("not a Prometheus API answer: no \"status\" and no \"data\": "
                                             "{\"result\": [...]} (save what /api/v1/query_range returns, unchanged)")
                out.end_of_answer(item)
            if out.ready():
                yield out.take()
    except Broken as exc:
        out.flush()
        if not n_answers and not out.records:
            raise UnrecognisedFormat(f"not a readable Prometheus API answer: {exc}") from None
        out.reject(text.buf[text.pos:text.pos + RAW_CLIP], f"the document stops being a Prometheus answer at "
                   f"character {text.dropped + text.pos:,}: {exc}; the rest is not read")
    yield out.result()


class _Rows:
    """Records as they are read, in blocks of elements; answer-level records between them. ``take()``:
    what was read since the last take, as a part."""

    def __init__(self, ctx: ParseContext):
        self.ctx, self.records, self.taken, self.skipped = ctx, 0, 0, 0
        self.pending: list[str] = []
        self.pending_chars = 0
        self.rows: list[pl.DataFrame] = []
        self.rejects: list[pl.DataFrame] = []
        self.problems: list[str] = []

    def add(self, elements: list[str]) -> None:
        self.pending += elements
        self.pending_chars += sum(map(len, elements))
        if self.pending_chars >= BLOCK_CHARS:
            self.flush()

    def flush(self) -> None:
        if self.pending:
            good, bad, records, skipped = _block(self.pending, self.records, self.ctx)
            self.rows.append(good)
            self.rejects.append(bad)
            self.records += records
            self.skipped += skipped
        self.pending, self.pending_chars = [], 0

    def reject(self, raw: str, reason: str) -> None:
        self.records += 1
        self.rejects.append(make_rejects([self.records], [raw], [reason]))

    def end_of_answer(self, meta: dict) -> None:
        self.flush()
        if meta.get("status") == "error":
            self.reject(json.dumps({k: v for k, v in meta.items() if k != "_result"})[:RAW_CLIP],
                        f"Prometheus answered with an error, not data: {meta.get('errorType')}: {meta.get('error')}")
        elif meta.get("resultType") in ("scalar", "string"):
            self.reject(json.dumps(meta.get("result"))[:RAW_CLIP],
                        f"a {meta['resultType']} result names no series: query a metric (a vector or a matrix)")
        elif not meta.get("_result"):
            self.reject(json.dumps(meta)[:RAW_CLIP], "no data.result in this answer")
        for key in ("warnings", "infos"):
            if meta.get(key):
                self.problems.append(f"Prometheus {key}: " + "; ".join(map(str, meta[key]))[:500])

    def ready(self) -> bool:
        return bool(self.rows or self.rejects)

    def take(self) -> ParseResult:
        rejects = pl.concat(self.rejects).sort("line_no") if self.rejects else make_rejects([], [], [])
        part = ParseResult(tables={"telemetry": pl.concat([series.empty(), *self.rows])}, rejects=rejects,
                           skipped=self.skipped, format="prometheus-json", records=self.records - self.taken,
                           problems=self.problems)
        self.rows, self.rejects, self.problems, self.skipped, self.taken = [], [], [], 0, self.records
        return part

    def result(self) -> ParseResult:
        self.flush()
        if not self.records:
            self.problems.append("the answer holds no series: the query matched nothing")
        return self.take()


def _block(texts: list[str], first: int, ctx: ParseContext) -> tuple[pl.DataFrame, pl.DataFrame, int, int]:
    """Result elements -> (telemetry rows, rejects, records, skipped records); records numbered from first + 1."""
    frame = pl.DataFrame({"eid": range(len(texts)), "text": texts}, schema={"eid": pl.Int64, "text": pl.Utf8})
    plain = frame["text"].str.contains(ELEMENT)
    parts, slow = [], frame.filter(~plain)
    if plain.any():
        try:
            parts.append(_plain(frame.filter(plain)))
        except (pl.exceptions.PolarsError, pl.exceptions.PanicException):
            slow = frame  # a reader quirk: every element of the block the slow way
    parts.append(_loaded(slow))
    elements = pl.concat([p[0] for p in parts], how="diagonal_relaxed")
    samples = pl.concat([p[1] for p in parts], how="diagonal_relaxed")
    # records in document order: an element's samples, or the element itself when it has none
    counts = samples.group_by("eid").len()
    elements = elements.join(counts, on="eid", how="left").sort("eid").with_columns(
        recs=pl.max_horizontal(pl.col("len").fill_null(0), 1))
    elements = elements.with_columns(base=first + pl.col("recs").cum_sum() - pl.col("recs"))
    samples = samples.join(elements.select("eid", "base"), on="eid").with_columns(
        line_no=pl.col("base") + pl.col("pos") + 1)
    broken = elements.filter(pl.col("why").is_not_null())
    empty = elements.filter(pl.col("why").is_null() & pl.col("len").is_null())
    table = elements.filter(pl.col("why").is_null()).select("eid", "name", "labels", pl.selectors.starts_with("l:"))
    labels = [c.removeprefix("l:") for c in table.columns if c.startswith("l:")]
    table = series.resolve(table.rename({"name": "metric"}), labels, ctx.host_hint)
    us = (pl.col("t").cast(pl.Float64, strict=False) * 1_000_000).round(0).cast(pl.Int64, strict=False)
    picked = samples.filter(pl.col("why").is_null()).join(table, on="eid").with_columns(
        time=pl.col("t"), time_t=pl.from_epoch(us, time_unit="us"))
    far = picked.filter(pl.col("time_t").is_not_null() & ~in_years(pl.col("time_t")))
    if far.height:  # an epoch of 99999999999 is the year 5138: a reject, not a reading
        picked = picked.filter(pl.col("time_t").is_null() | in_years(pl.col("time_t")))
    good, bad = series.finish(picked, no_metric=NO_NAME)
    odd = pl.concat([samples.filter(pl.col("why").is_not_null()),
                     far.select("eid", "pos", "t", "value", "line_no", why=outside_years(pl.col("time_t"), pl.col("t")),
                                raw=pl.format('{} [{}, "{}"]', "labels", "t", "value"))], how="diagonal_relaxed")
    rejects = pl.concat([
        make_rejects(bad["line_no"], bad.select(pl.format('{} [{}, "{}"]', "labels", "time", "value"))[:, 0],
                     bad["reason"].to_list()),
        make_rejects(odd["line_no"], odd["raw"], odd["why"].to_list()),
        make_rejects(broken["base"] + 1, broken["raw"], broken["why"].to_list())])
    return good, rejects, int(elements["recs"].sum()), empty.height


def _plain(plain: pl.DataFrame) -> tuple[pl.DataFrame, pl.DataFrame]:
    """Elements of the plain shape: labels decoded by polars, samples read as CSV (one ``t,"v"`` line each,
    which the shape guarantees: no blanks, quotes, commas or brackets inside a sample's value)."""
    eids, heads, counts, bodies = [], [], [], []
    for eid, text in plain.iter_rows():
        head = _HEAD.match(text)
        rest = "".join(text[head.end():].split())  # blanks of jq-pretty text, outside every string here
        body = (rest[2:-3] if head.group(2) == "values" else rest[1:-2]).replace("],[", "\n")
        eids.append(eid), heads.append(head.group(1)), bodies.append(body)
        counts.append(body.count("\n") + 1 if body else 0)
    labels = pl.Series(heads, dtype=pl.Utf8).str.json_decode(infer_schema_length=None)
    fields = [f.name for f in labels.dtype.fields]
    m = pl.col("m")
    elements = pl.DataFrame({"eid": eids, "m": labels, "labels": heads}).select(
        "eid", "labels", name=m.struct.field("__name__") if "__name__" in fields else pl.lit(None, pl.Utf8),
        why=pl.lit(None, pl.Utf8), raw=pl.lit(None, pl.Utf8),
        *[m.struct.field(f).alias(series.col(f)) for f in fields if f != "__name__"])
    text = "\n".join(b for b in bodies if b)
    csv = (pl.read_csv(text.encode(), has_header=False, schema={"t": pl.Utf8, "value": pl.Utf8}, quote_char='"')
           if text else pl.DataFrame(schema={"t": pl.Utf8, "value": pl.Utf8}))
    ids = pl.DataFrame({"eid": eids, "n": counts}, schema={"eid": pl.Int64, "n": pl.Int64}).select(
        pl.col("eid").repeat_by("n")).explode("eid").drop_nulls()
    samples = pl.concat([ids, csv], how="horizontal").select(
        "eid", pos=pl.int_range(pl.len(), dtype=pl.Int64).over("eid"), t="t", value="value",
        why=pl.lit(None, pl.Utf8), raw=pl.lit(None, pl.Utf8))
    return elements, samples


def _loaded(slow: pl.DataFrame) -> tuple[pl.DataFrame, pl.DataFrame]:
    """Elements of any other shape (another writer's numbers, histograms, broken ones) by json.loads, one by one."""
    dec = jsonlines.decode(slow.select(pl.col("eid").alias("line_no"), "text"), python=True)
    elements = [{"eid": no, "why": why, "raw": raw} for no, raw, why in dec.rejects.iter_rows()]
    samples: list[tuple] = []
    for eid, raw, obj in dec.objects:
        metric = obj.get("metric")
        floats = obj["values"] if "values" in obj else [obj["value"]] if "value" in obj else None
        hists = obj["histograms"] if "histograms" in obj else [obj["histogram"]] if "histogram" in obj else []
        why = ("not a series ({\"metric\": {...}, \"values\": [...]})" if not isinstance(metric, dict)
               else "a series without \"values\" or \"value\"" if floats is None and not hists
               else "\"values\" is not a list of samples" if not isinstance(floats or [], list)
               or not isinstance(hists, list) else None)
        if why:
            elements.append({"eid": eid, "why": why, "raw": raw})
            continue
        labels = {str(k): jsonlines.as_text(v) for k, v in metric.items()}
        prefix = json.dumps(metric, separators=(",", ":"))
        elements.append({"eid": eid, "name": labels.pop("__name__", None), "labels": prefix,
                         **{series.col(k): v for k, v in labels.items()}})
        for pos, s in enumerate(floats or []):
            ok = (isinstance(s, list) and len(s) == 2 and type(s[0]) in (int, float)
                  and isinstance(s[1], (str, int, float)) and not isinstance(s[1], bool))
            samples.append((eid, pos, jsonlines.as_text(s[0]), jsonlines.as_text(s[1]), None, None) if ok else
                           (eid, pos, None, None, "not a sample ([<unix time>, \"<value>\"])",
                            f"{prefix} {json.dumps(s)}"[:RAW_CLIP]))
        base = len(floats or [])
        samples += [(eid, base + i, None, None, HISTOGRAM, f"{prefix} {json.dumps(h)}"[:RAW_CLIP])
                    for i, h in enumerate(hists)]
    schema = {"eid": pl.Int64, "name": pl.Utf8, "labels": pl.Utf8, "why": pl.Utf8, "raw": pl.Utf8}
    frame = pl.from_dicts(elements, infer_schema_length=None) if elements else pl.DataFrame(schema=schema)
    frame = frame.with_columns([pl.lit(None, t).alias(c) for c, t in schema.items() if c not in frame.columns])
    return frame.cast({c: pl.Utf8 for c in frame.columns if c != "eid"}), pl.DataFrame(samples, schema=_SAMPLES,
                                                                                          orient="row")
