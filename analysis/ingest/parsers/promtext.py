"""Walking a Prometheus API answer as a stream of text (for analysis/ingest/parsers/promjson.py).

The answer's own keys (status, errorType, error, warnings, data.resultType, ...) are decoded one value at
a time; the elements of data.result are handed over as text, many at a time: the elements the text read
so far holds whole are cut at the boundaries between series, ``}`` ``,`` ``{"metric":`` (which cannot
occur inside an element or a JSON string: a quote inside a string is escaped), up to the first place
the array may end; the element the text read so far ends in is then decoded alone to find its end.
"""
from __future__ import annotations

import codecs
import json
import re
from collections.abc import Iterable, Iterator

MAX_ELEMENT_CHARS = 64 * 1024 * 1024
_WS = re.compile(r"[ \t\n\r\ufeff]*")
_BOUNDARY = re.compile(r'\}\s*,\s*(?=\{\s*"metric"\s*:)')
_ARRAY_END = re.compile(r'\}\s*\]\s*(?:\}|,\s*")')  # an element's end, the array's, then data's end or next key
_DECODER = json.JSONDecoder()


class Broken(Exception):
    """The text stops being a Prometheus answer here."""


class Text:
    """The decompressed chunks as one text with a read position; text already read is dropped on refill."""

    def __init__(self, chunks: Iterable[bytes]):
        self._chunks, self._utf8 = iter(chunks), codecs.getincrementaldecoder("utf-8")("replace")
        self.buf, self.pos, self.eof, self.dropped = "", 0, False, 0

    def _more(self) -> bool:
        if self.eof:
            return False
        chunk = next(self._chunks, None)
        self.eof = chunk is None
        self.dropped += self.pos
        self.buf = self.buf[self.pos:] + self._utf8.decode(chunk or b"", final=self.eof)
        self.pos = 0
        return True

    def peek(self) -> str | None:
        while True:
            self.pos = _WS.match(self.buf, self.pos).end()
            if self.pos < len(self.buf):
                return self.buf[self.pos]
            if not self._more():
                return None

    def take(self, char: str) -> None:
        got = self.peek()
        if got != char:
            raise Broken("the text ends (cut off?)" if got is None else f"'{char}' expected, '{got}' found")
        self.pos += 1

    def value(self) -> tuple[object, str]:
        """The next JSON value and its text (a number at the end of the text so far may go on: read more)."""
        while True:
            if self.peek() is None:
                raise Broken("the text ends (cut off?)")
            try:
                value, end = _DECODER.raw_decode(self.buf, self.pos)
                if end < len(self.buf) or self.eof:
                    start, self.pos = self.pos, end
                    return value, self.buf[start:end]
            except json.JSONDecodeError as exc:
                if self.eof:
                    raise Broken(f"invalid or cut-off JSON ({exc.msg})") from None
            except RecursionError:
                raise Broken("JSON nested too deeply") from None
            if len(self.buf) - self.pos > MAX_ELEMENT_CHARS:
                raise Broken(f"a value longer than {MAX_ELEMENT_CHARS:,} characters (one series this long: "
                             "split the query by time or by host)")
            self._more()

    def members(self) -> Iterator[str]:
        """An object's keys; the caller reads each key's value before asking for the next."""
        self.take("{")
        first = True
        while self.peek() != "}":
            if not first:
                self.take(",")
            first = False
            key, _ = self.value()
            if not isinstance(key, str):
                raise Broken("an object key that is not a string")
            self.take(":")
            yield key
        self.pos += 1

    def elements(self) -> Iterator[list[str]]:
        """An array's elements as text, in lists."""
        self.take("[")
        while self.peek() not in ("]", None):
            start = self.pos
            end = _ARRAY_END.search(self.buf, start)
            whole, prev = [], start
            for m in _BOUNDARY.finditer(self.buf, start, end.start() if end else len(self.buf)):
                whole.append(self.buf[prev:m.start() + 1])
                prev = m.end()
            self.pos = prev
            if whole:
                yield whole
            yield [self.value()[1]]
            if self.peek() == ",":
                self.pos += 1
        self.take("]")


def answers(text: Text) -> Iterator[tuple[str, object]]:
    """('elements', [text, ...]) for data.result as it is read, then ('end', the answer's other keys and
    data's, '_result' when it had a result array), per answer."""
    while text.peek() is not None:
        meta: dict = {}
        for key in text.members():
            if key != "data" or text.peek() != "{":
                meta[key] = text.value()[0]
                continue
            for dkey in text.members():
                if dkey == "result" and text.peek() == "[" and meta.get("resultType") in (None, "matrix", "vector"):
                    meta["_result"] = True
                    for elements in text.elements():
                        yield "elements", elements
                else:
                    meta[dkey] = text.value()[0]
        yield "end", meta
