"""Reading bytes into physical lines: both split paths agree on every ugly corner."""
import gzip

import pytest

from analysis.lines import read_lines


@pytest.mark.parametrize("data,expected", [
    (b"a\nb\n", ["a", "b"]),
    (b"a\nb", ["a", "b"]),                       # no final newline: still a line
    (b"a\n\n\nb\n", ["a", "", "", "b"]),         # blank lines keep their numbers
    (b"a\r\nb\r\n", ["a", "b"]),                 # CRLF
    (b"a\rb\nc\n", ["a\rb", "c"]),               # a bare CR is text
    (b"\x00\x00x\ny\n", ["x", "y"]),             # NULs after a hard reset
    (b"caf\xe9\n", ["caf\ufffd"]),               # invalid UTF-8 replaced, line kept
    (b'"open\nclose"\n', ['"open', 'close"']),   # quotes mean nothing
    (b"a\x1fb\nc\n", ["a\x1fb", "c"]),           # the fast path's separator byte: plain split
])
def test_split(tmp_path, data, expected):
    path = tmp_path / "f.log"
    path.write_bytes(data)
    lf = read_lines(path)
    assert lf.lines["text"].to_list() == expected
    assert lf.lines["line_no"].to_list() == list(range(1, len(expected) + 1))
    assert lf.n_lines == len(expected)
    gz = tmp_path / "f.log.gz"
    gz.write_bytes(gzip.compress(data))
    assert read_lines(gz).lines["text"].to_list() == expected


def test_empty_and_invalid_utf8_flag(tmp_path):
    (tmp_path / "e").write_bytes(b"")
    assert read_lines(tmp_path / "e").n_lines == 0
    (tmp_path / "b").write_bytes(b"\xff\n")
    assert read_lines(tmp_path / "b").problems == ["invalid UTF-8 bytes replaced by U+FFFD"]
