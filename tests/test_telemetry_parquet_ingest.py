"""Telemetry Parquet through the ingest engine: gzipped files, damaged files."""
import gzip
import io
from datetime import datetime

import polars as pl
import pyarrow.parquet as pq
import pytest

from analysis import warehouse
from analysis.ingest.contract import IngestOptions
from analysis.ingest.one_file import ingest_file

FRAME = pl.DataFrame({"time": [datetime(2024, 3, 1, 10, 0), datetime(2024, 3, 1, 10, 1), datetime(2024, 3, 1, 10, 2)],
                      "host": ["gpu001"] * 3, "metric": ["DCGM_FI_DEV_POWER_USAGE"] * 3,
                      "gpu": [0, 1, 2], "value": [301.5, 298.0, 305.25]})


def _parquet_bytes(compression: str = "zstd") -> bytes:
    buf = io.BytesIO()
    FRAME.write_parquet(buf, compression=compression)
    return buf.getvalue()


@pytest.fixture
def env(tmp_path):
    src = tmp_path / "src"
    (src / "telemetry").mkdir(parents=True)
    con = warehouse.connect(tmp_path / "w.duckdb")
    yield src, con
    con.close()


def _ingest(env, name: str, data: bytes):
    src, con = env
    path = src / "telemetry" / name
    path.write_bytes(data)
    return ingest_file(con, path, "telemetry", src, IngestOptions())


def test_gzipped_parquet_is_ingested(env):
    outcome = _ingest(env, "job-7.parquet.gz", gzip.compress(_parquet_bytes()))
    assert (outcome.status, outcome.lines, outcome.rows, outcome.rejects) == ("ok", 3, 3, 0)
    con = env[1]
    stored = con.execute("SELECT host, gpu, value FROM telemetry ORDER BY gpu").fetchall()
    assert stored == [("gpu001", 0, 301.5), ("gpu001", 1, 298.0), ("gpu001", 2, 305.25)]
    assert con.execute("SELECT format, lines, row_lines FROM ingested_files").fetchall() == [
        ("telemetry-parquet", 3, 3)]


def test_truncated_parquet_is_unrecognised_with_a_readable_message(env):
    data = _parquet_bytes()
    outcome = _ingest(env, "job-8.parquet", data[: len(data) // 2])  # the footer is gone
    assert outcome.status == "unrecognised"
    assert outcome.message == "not a readable Parquet file (damaged, truncated or another format)"


def test_parquet_with_damaged_column_data_is_unrecognised(env):
    # the footer reads but a column chunk's compressed bytes are garbage: before, the polars error
    # reached the operator as "could not be parsed (a goodput bug ...): ComputeError: ..."
    data = bytearray(_parquet_bytes())
    chunk = pq.ParquetFile(io.BytesIO(bytes(data))).metadata.row_group(0).column(0)
    start = chunk.data_page_offset + chunk.total_compressed_size // 2
    for i in range(start, chunk.data_page_offset + chunk.total_compressed_size):
        data[i] ^= 0x5A
    pq.ParquetFile(io.BytesIO(bytes(data))).metadata  # precondition: still a readable footer
    outcome = _ingest(env, "job-9.parquet", bytes(data))
    assert outcome.status == "unrecognised"
    assert outcome.message.startswith("not a readable Parquet file: its footer reads but its column data is damaged")
    reject = env[1].execute("SELECT reason FROM rejects").fetchall()
    assert reject == [(f"unrecognised: {outcome.message}",)]
