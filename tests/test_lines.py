"""Reading bytes into physical lines: both split paths agree on every ugly corner."""
import gzip

import polars as pl
import pytest

from analysis.ingest.lines import read_lines


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


@pytest.mark.parametrize("gz", [False, True])
def test_a_stream_of_chunks_reads_what_read_lines_reads(tmp_path, gz):
    """LineStream (big logs, bounded memory) gives the same lines, numbers, rejects and hash as read_lines,
    whatever the chunk size: long lines, CRLF, bad bytes and a missing final newline across chunk edges."""
    from analysis.ingest.lines import LineStream, read_raw
    rows = [b"line %d \xe9\r" % i if i % 7 == 0 else b"x" * (5000 if i % 13 == 0 else i % 40) for i in range(400)]
    data = b"\n".join(rows)  # no final newline
    path = tmp_path / ("big.log.gz" if gz else "big.log")
    path.write_bytes(gzip.compress(data) if gz else data)
    whole = read_lines(path, max_line_bytes=4000)
    for chunk_bytes in (1, 700, 10_000, 1 << 30):
        stream = LineStream(path, max_line_bytes=4000, chunk_bytes=chunk_bytes)
        got = pl.concat(list(stream.frames()))
        assert got.equals(whole.lines), chunk_bytes
        assert stream.n_lines == whole.n_lines == 400
        assert stream.rejects["line_no"].to_list() == whole.rejects["line_no"].to_list() == [
            i + 1 for i in range(400) if i % 13 == 0 and i % 7]
        assert stream.sha256 == read_raw(path).sha256
        assert stream.problems == ["invalid UTF-8 bytes replaced by U+FFFD"]
