"""kubernetes/: Kubernetes objects as kubectl and the API write them, and Kubernetes Events as an event exporter
writes them (docs/sources.md#kubernetes), into k8s_objects, one row per object state.

Three shapes, told apart by the file's first line:
- a ``kubectl get pods,jobs,jobsets,workloads,pytorchjobs -A -o json`` answer: one ``List`` document (``items``),
  pretty-printed over many lines or compact on one; its items are records numbered from 1 in document order
  (line_no), as promjson.py numbers a Prometheus answer's. Several documents one after another (a script
  appending one answer per run, or ``kubectl get -w -o json``, which prints each object pretty) are read in
  turn: a top-level object that is no List is one record.
- JSON lines: one object per line, or a watch event ``{"type": "ADDED|MODIFIED|DELETED", "object": {...}}``
  (the API's watch, ``kubectl get -w -o json --output-watch-events`` piped through ``jq -c``); line_no is the
  line. A BOOKMARK event is skipped (it carries no object state), an ERROR event is a reject.
- event-exporter lines (resmoio/kubernetes-event-exporter): a core/v1 Event with its involvedObject; the exporter
  often drops ``kind``, so an object with an involvedObject is an Event.
A file whose first line is ``{`` alone, or a List, is a document; any other file is JSON lines.

Every kind is stored with the generic columns; pods, Jobs, JobSets, Kueue Workloads, PyTorchJobs, Events and Nodes
(their annotations: NVSentinel's quarantine record, read by the view k8s_node_states) fill their own (sql/ingest/k8s_objects_rows.sql, which reads the JSON: no Python per object beyond cutting the items
out of a document). Rejects: a record that does not decode, is no object, has no kind or no metadata.uid.

An object state (uid, resourceVersion, deleted) is stored once. A snapshot repeats every object that did not
change since the last one: such a record is skipped, with a note in the file's message, when the warehouse
already holds the state from another file, or a file read before it in the same run, or an earlier record of
the same file. A file read again compares with the other files only (its own rows are replaced), so reading it
again stores what it stored before. The first file holding a state keeps it: forgetting that file loses the
state until the later snapshots are read again (goodput forget them too).

observed_at is the snapshot's time: the file's modification time (a List or a watch line carries none; an
object's own timestamps are when it changed, not when it was seen).

Memory: a document is read as a stream (promtext.Text), its items cut out one at a time, worked in blocks of
about BLOCK_CHARS; JSON lines likewise in blocks of lines.
"""
from __future__ import annotations

import json
from collections.abc import Iterable, Iterator

import duckdb
import polars as pl

from analysis import sql
from analysis.ingest.contract import ParseContext, ParseResult, UnrecognisedFormat
from analysis.ingest.lines import RAW_CLIP, empty_rejects, make_rejects
from analysis.ingest.parsers.promtext import Broken, Text

TABLE = "k8s_objects"
BLOCK_CHARS = 8 * 1024 * 1024
HEAD_BYTES = 1024 * 1024  # a first line longer than this is a document on one line (a compact List)
RAW_CHARS = 16 * 1024  # of an object's JSON kept in k8s_objects.raw
STATE = ["uid", "resource_version", "deleted"]  # one object state
UNWRITTEN = "kubernetes/states"  # ctx.unwritten's key: the states the batch's earlier files hold
DUPLICATE = ("record(s) repeat an object state already stored (the same uid, resourceVersion and deleted flag, "
             "from an earlier snapshot or record): skipped")


def parse(lines: pl.DataFrame, ctx: ParseContext) -> ParseResult:
    """A file that does not start with ``{`` (json_parts reads those): JSON lines, if any line is an object."""
    frame = lines.select("line_no", "text")
    out = _Block(ctx, "kubernetes-jsonl")
    result = out.part(frame, lines.height)
    if result.rejects.height and not out.objects:
        raise UnrecognisedFormat("not Kubernetes JSON: no line is a JSON object (kubectl get -o json, watch "
                                 "events or event-exporter lines)")
    result.records = None  # lines, counted by the engine
    result.problems += out.notes()
    out.remember()
    return result


def json_parts(chunks: Iterable[bytes], ctx: ParseContext) -> Iterator[ParseResult]:
    """The file's records, a part for each block read (the engine writes each as it comes)."""
    chunks = iter(chunks)
    head = b""
    for chunk in chunks:
        head += chunk
        if b"\n" in head or len(head) > HEAD_BYTES:
            break
    first = head.split(b"\n", 1)[0].strip().lstrip(b"\xef\xbb\xbf")
    stream = _chain(head, chunks)
    document = first == b"{" or len(first) > HEAD_BYTES or _is_list(first)
    out = _Block(ctx, "kubernetes-list" if document else "kubernetes-jsonl")
    last = None
    for part in _document(stream, out) if document else _json_lines(stream, out):
        if last is not None:
            yield last
        last = part
    last.problems += out.notes()  # once for the file, not per block
    yield last
    out.remember()


def _chain(head: bytes, chunks: Iterator[bytes]) -> Iterator[bytes]:
    yield head
    yield from chunks


def _is_list(line: bytes) -> bool:
    try:
        obj = json.loads(line)
    except (ValueError, RecursionError):
        return False
    return isinstance(obj, dict) and isinstance(obj.get("items"), list)


def _document(stream: Iterator[bytes], out: _Block) -> Iterator[ParseResult]:
    """Lists' items (and top-level objects that are no List), in document order."""
    text = Text(stream)
    pending: list[str] = []
    size = 0
    try:
        while text.peek() is not None:
            if text.peek() != "{":
                raise Broken(f"'{{' expected, '{text.peek()}' found")
            meta, listed = {}, False
            for key in text.members():
                if key == "items" and text.peek() == "[":
                    listed = True
                    text.take("[")
                    while text.peek() not in ("]", None):
                        item = text.value()[1]
                        pending.append(item)
                        size += len(item)
                        if text.peek() == ",":
                            text.pos += 1
                        if size >= BLOCK_CHARS:
                            yield out.records(pending)
                            pending, size = [], 0
                    text.take("]")
                else:
                    meta[key] = text.value()[0]
            if not listed:  # an object printed alone (kubectl get -w -o json, or one object's -o json)
                pending.append(json.dumps(meta))
                size += len(pending[-1])
    except Broken as exc:
        if pending:
            yield out.records(pending)
            pending = []
        if not out.numbered:
            raise UnrecognisedFormat(f"not Kubernetes JSON: {exc}") from None
        out.numbered += 1
        yield ParseResult(tables={}, rejects=make_rejects([out.numbered], [text.buf[text.pos:text.pos + RAW_CLIP]], [
            f"the document stops being JSON at character {text.dropped + text.pos:,}: {exc}; the rest is not read"]),
            format=out.format, records=1)
    if pending or not out.numbered:
        yield out.records(pending)


def _json_lines(stream: Iterator[bytes], out: _Block) -> Iterator[ParseResult]:
    """One record a line: blocks of whole lines; a line over max_line_bytes is a reject, not held whole."""
    limit = out.ctx.options.max_line_bytes
    rest, lines, size, n, long_line = b"", [], 0, 0, None
    for chunk in stream:
        rest += chunk
        *whole, rest = rest.split(b"\n")
        for line in whole:
            n += 1
            if long_line is not None:  # the end of a line already too long
                lines.append((n, None, long_line))
                long_line = None
            elif len(line) > limit:
                lines.append((n, None, line[:RAW_CLIP]))
            else:
                lines.append((n, line, None))
                size += len(line)
        if len(rest) > limit and long_line is None:
            long_line, rest = rest[:RAW_CLIP], b""
        elif long_line is not None:
            rest = b""
        if size >= BLOCK_CHARS:
            yield _lines_part(out, lines, limit)
            lines, size = [], 0
    if rest or long_line is not None:
        n += 1
        lines.append((n, None, long_line) if long_line is not None else (n, rest, None))
    yield _lines_part(out, lines, limit)


def _lines_part(out: _Block, lines: list[tuple], limit: int) -> ParseResult:
    good = [(no, b.decode("utf-8", "replace").rstrip("\r")) for no, b, _ in lines if b is not None]
    frame = pl.DataFrame(good, schema={"line_no": pl.Int64, "text": pl.Utf8}, orient="row")
    part = out.part(frame, len(lines))
    long = [(no, raw.decode("utf-8", "replace")) for no, b, raw in lines if b is None]
    if long:
        part.rejects = pl.concat([part.rejects, make_rejects([no for no, _ in long], [r for _, r in long],
                                 f"a line longer than {limit:,} bytes (max_line_bytes)")]).sort("line_no")
    return part


class _Block:
    """Records -> k8s_objects rows, rejects and skips, a block at a time; remembers the file's object states."""

    def __init__(self, ctx: ParseContext, fmt: str):
        self.ctx, self.format, self.numbered, self.objects = ctx, fmt, 0, 0
        self.skips: dict[str, int] = {}  # the file's skipped records by why
        self.seen = pl.DataFrame(schema={"uid": pl.Utf8, "resource_version": pl.Utf8, "deleted": pl.Boolean})
        self.snapshot = ctx.mtime

    def records(self, texts: list[str]) -> ParseResult:
        """Document records, numbered after the ones before."""
        first = self.numbered + 1
        frame = pl.DataFrame({"line_no": range(first, first + len(texts)), "text": texts},
                             schema={"line_no": pl.Int64, "text": pl.Utf8})
        self.numbered += len(texts)
        return self.part(frame, len(texts))

    def part(self, frame: pl.DataFrame, records: int) -> ParseResult:
        """``records``: the lines or records the part covers (``frame``'s, and lines rejected before it)."""
        texts = frame.height
        frame = frame.filter(pl.col("text").str.strip_chars() != "")
        con = duckdb.connect()
        try:
            con.register("k8s_texts", frame)
            out = sql.query(con, "ingest/k8s_objects_rows", {"snapshot": self.snapshot, "clip": RAW_CHARS})
        finally:
            con.close()
        self.objects += int(out["is_object"].sum())
        bad = out.filter(pl.col("why").is_not_null())
        marks = out.filter(pl.col("skip").is_not_null())
        rows = out.filter(pl.col("why").is_null() & pl.col("skip").is_null())
        fresh = rows.unique(STATE, keep="first", maintain_order=True).join(self._known(rows), on=STATE, how="anti",
                                                                           nulls_equal=True)
        self.seen = pl.concat([self.seen, fresh.select(STATE)])
        for why, n in marks.group_by("skip").len().iter_rows():
            self.skips[why] = self.skips.get(why, 0) + n
        if rows.height > fresh.height:
            self.skips[DUPLICATE] = self.skips.get(DUPLICATE, 0) + rows.height - fresh.height
        return ParseResult(
            tables={TABLE: fresh.drop("why", "skip", "is_object", "text_clip")},
            rejects=make_rejects(bad["line_no"], bad["text_clip"], bad["why"].to_list()) if bad.height else empty_rejects(),
            skipped=texts - fresh.height - bad.height,  # blank lines, bookmarks, repeated states
            format=self.format, records=records)

    def _known(self, rows: pl.DataFrame) -> pl.DataFrame:
        """The states of ``rows`` stored already: by another file, a file of the unwritten batch, or this one."""
        keys = rows.select(STATE).unique()
        known = [self.seen]
        if self.ctx.unwritten is not None and UNWRITTEN in self.ctx.unwritten:
            known.append(self.ctx.unwritten[UNWRITTEN])
        if self.ctx.look_up is not None and keys.height:
            known.append(self.ctx.look_up("ingest/k8s_stored_states", keys).select(STATE))
        return pl.concat(known).unique()

    def notes(self) -> list[str]:
        """The file's message: how many records were skipped, and why."""
        return [f"{n} {why}" for why, n in self.skips.items()]

    def remember(self) -> None:
        """The file read whole: its states are known to the batch's later files (not before: a file that fails
        part-way stores nothing)."""
        if self.ctx.unwritten is not None:
            before = self.ctx.unwritten.get(UNWRITTEN)
            self.ctx.unwritten[UNWRITTEN] = pl.concat([x for x in (before, self.seen) if x is not None])
