"""The faster ingest paths of issue 35 read exactly what the paths they stand in for read: long CSV split into
columns by polars' CSV reader (csvlines.split_columns), Parquet telemetry kept in its own types, the control-byte
check on a file's bytes, and a small line-streamed file read and hashed once."""
import math
import random
import struct

import polars as pl
import pytest

from analysis import warehouse
from analysis.ingest import lines, one_file
from analysis.ingest.contract import IngestOptions, ParseContext
from analysis.ingest.engine import ingest_directory
from analysis.ingest.parsers import csvlines, telemetry


def _frame(texts: list[str]) -> pl.DataFrame:
    return pl.DataFrame({"line_no": range(1, len(texts) + 1), "text": texts}, schema={"line_no": pl.Int64,
                                                                                        "text": pl.Utf8})


def _as_columns(split: pl.DataFrame, width: int) -> pl.DataFrame:
    return split.select("line_no", "text", *[pl.col("fields").list.get(i).alias(f"f{i}") for i in range(width)])


def test_split_columns_gives_the_fields_split_lines_gives():
    texts = ['2024-03-01T00:00:00Z,gpu0001,"node_infiniband_x_total{device=""mlx5_0"",port=""1""}",0',
             ' x ,"y ""z""",,w', '"",a,b,c', 'a,b,c,"d,e"', '\u3000a\x1c,b,"c ",d', 'a,b,c,d', ' a , b ,c,d ',
             '"\u00e9",\u00e9,"",""']
    got = csvlines.split_columns(_frame(texts), 4)
    assert got is not None
    assert got.equals(_as_columns(csvlines.split_lines(_frame(texts)), 4))
    plain = ["a,b,c,d", " a ,b\t,c,d"]  # no quote at all: stripped as split_lines strips unquoted lines
    assert csvlines.split_columns(_frame(plain), 4).equals(_as_columns(csvlines.split_lines(_frame(plain)), 4))


@pytest.mark.parametrize("odd", ['a,b,c', 'a,b,c,d,e', 'a,b,"c"x,d', 'a,b,c"d,e', 'a,"b,c,d', 'a,b\r,c,d',
                                 '\ufeffa,b,c,d', 'a,b,c,d,'])
def test_split_columns_leaves_any_other_line_to_split_lines(odd):
    """A ragged line, a stray quote, a CR or a BOM: the whole piece goes the csv-module way, reasons and all."""
    assert csvlines.split_columns(_frame(["a,b,c,d", odd]), 4) is None


def test_the_control_byte_check_is_the_byte_regex():
    rng = random.Random(35)
    alphabet = [0, 1, 8, 9, 10, 11, 12, 13, 14, 27, 31, 32, 65, 91, 109, 127, 128, 200]
    cases = [b"", b"abc\n", b"\x00\n", b"\x1b[31mred\x1b[0m\n", b"\x1b\n", b"x\x7f\n", b"\x0b\x0c\n", b"\t\r\n"]
    cases += [bytes(rng.choice(alphabet) for _ in range(rng.randint(0, 12))) for _ in range(20_000)]
    for data in cases:
        assert lines.has_control_lines(data) == (lines._CONTROL_LINE_BYTES.search(data) is not None), data


def test_parquet_values_are_stored_as_the_floats_they_are(tmp_path):
    """A Float64 value is taken as it is (not through its text): every finite one is stored bit for bit; NaN,
    Inf and the Prometheus stale marker are refused with their reasons, as before."""
    stale = struct.unpack("<d", struct.pack("<Q", 0x7FF0000000000002))[0]
    values = [0.0, -0.0, 5e-324, 2.2250738585072014e-308, 1.7976931348623157e308, 0.1, 1 / 3, 96.111, 9.3844e10,
              2.0 ** 63, math.nan, math.inf, -math.inf, stale]
    path = tmp_path / "job-1.parquet"
    pl.DataFrame({"time": ["2024-03-01T00:00:00"] * len(values), "host": "gpu0001", "metric": "gpu_power_watts",
                  "value": values}).with_columns(pl.col("time").str.to_datetime()).write_parquet(path)
    ctx = ParseContext(path=path, source="telemetry", sha256="x", host_hint=None, options=IngestOptions())
    result = telemetry.parse_parquet(path, ctx)
    good = result.tables["telemetry"]
    assert good["line_no"].to_list() == list(range(1, 11))
    stored = [struct.pack("<d", v) for v in good["value"].to_list()]
    assert stored == [struct.pack("<d", v) for v in values[:10]]
    assert result.rejects["reason"].to_list()[:3] == ["value is NaN (no reading)",
                                                      "value is +Inf (not a finite number)",
                                                      "value is -Inf (not a finite number)"]
    assert result.rejects["reason"].to_list()[3].startswith("Prometheus stale marker")


def _ingested(src, db) -> dict:
    con = warehouse.connect(db)
    ingest_directory(con, src)
    out = {t: con.sql(f"SELECT * EXCLUDE (file) FROM {t} ORDER BY ALL").pl() for t in ("telemetry", "rejects")}
    out["files"] = con.sql("SELECT lines, row_lines, rows, rejects, skipped, merged, status, message, sha256 "
                           "FROM ingested_files ORDER BY path").pl()
    con.close()
    return out


def test_a_small_streamed_file_read_once_gives_what_streaming_it_gives(tmp_path, monkeypatch):
    src = tmp_path / "src"
    (src / "network").mkdir(parents=True)
    body = ["time,host,metric,value"]
    metric = '"node_infiniband_symbol_error_total{device=""mlx5_0"",port=""1""}"'
    body += [f"2024-03-0{d}T00:00:00Z,gpu000{h},{metric},{h * d}" for d in range(1, 4) for h in range(1, 5)]
    body += ["2024-03-04T00:00:00Z,gpu0001,m,not-a-number", "garbled,line", ""]
    (src / "network" / "ib-port-counters-2024-03-01.csv").write_text("\n".join(body) + "\n")
    (src / "network" / "odd.csv").write_bytes(b"time,host,metric,value\n\xff\xfe,gpu1,m,1\n2024-03-01,gpu1,m,2\n")
    reads = []
    real = lines.hash_only
    monkeypatch.setattr(one_file, "hash_only", lambda *a, **k: reads.append(a[0]) or real(*a, **k))
    once = _ingested(src, tmp_path / "once.duckdb")
    assert [p.name for p in reads] == []  # read once: no hashing pass before the parse
    monkeypatch.setattr(one_file, "_read_whole", lambda path, source: False)
    streamed = _ingested(src, tmp_path / "streamed.duckdb")
    assert sorted(p.name for p in reads) == ["ib-port-counters-2024-03-01.csv", "odd.csv"]
    for name, frame in once.items():
        assert frame.equals(streamed[name]), name
    assert once["telemetry"].height == 13 and once["rejects"].height >= 2  # 12 + the readable line of odd.csv
