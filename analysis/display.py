"""Text from the outside world made safe to print on one terminal line.

File names are chosen by whoever writes the source directory: a name holding a
newline would print as a second, fake log line, an ANSI escape would rewrite the
terminal, and undecodable bytes (Python keeps them as lone surrogates) would make
printing fail. Every path or raw text in warnings, summaries and `goodput check`
goes through ``printable``.
"""
from __future__ import annotations

import os
import re

# C0/C1 controls, DEL, line/paragraph separators, bidi overrides, lone surrogates
_UNSAFE = re.compile("[\x00-\x1f\x7f-\x9f\u2028\u2029\u200e\u200f\u202a-\u202e\u2066-\u2069\ud800-\udfff]")
_NAMED = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}


def _escape(match: re.Match) -> str:
    ch = match.group(0)
    code = ord(ch)
    if ch in _NAMED:
        return _NAMED[ch]
    if 0xDC80 <= code <= 0xDCFF:  # a byte that was not UTF-8 (surrogateescape): show the byte
        return f"\\x{code - 0xDC00:02x}"
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def printable(value) -> str:
    """``str(value)`` with control characters escaped (``\\n``, ``\\x1b``, ``\\u202e``)."""
    return _UNSAFE.sub(_escape, str(value))


def utf8_path(text: str) -> str:
    """A path as the warehouse stores it: valid UTF-8. A file name with bytes that are not UTF-8
    (Python holds them as lone surrogates, which DuckDB refuses) gets them as ``\\xff``."""
    try:
        text.encode("utf-8")
        return text
    except UnicodeEncodeError:
        return os.fsencode(text).decode("utf-8", errors="backslashreplace")
