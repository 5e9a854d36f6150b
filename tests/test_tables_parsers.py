"""Tickets, topology and telemetry (CSV and parquet) parsers."""
from datetime import datetime, timedelta

import polars as pl
import pytest

from analysis.ingest.contract import IngestOptions, ParseContext, UnrecognisedFormat
from analysis.ingest.parsers import telemetry, tickets, topology
from conftest import parse_file

TICKETS = """\
Resolution,Ticket_ID,HOST,Opened,Closed,Component
"replaced GPU 3, reseated riser",T-1,gpu001,2024-01-15 10:00,2024-01-16 12:00,GPU
,T-2,gpu002,2024-01-17T08:00:00Z,,NIC

x,T-3,,2024-01-17,,PSU
x,T-4,gpu004,yesterday,,PSU
"swapped DIMM A1
and ran memtest",T-5,gpu005,2024-02-01,2024-02-02,DIMM
x,T-6,gpu006,2024-02-01,soon,PSU
"""


def _write(tmp_path, name, text):
    path = tmp_path / name
    path.write_text(text)
    return path


def test_tickets_quoted_comma_open_ticket_multiline(tmp_path):
    result, counts = parse_file(tickets.parse, _write(tmp_path, "tickets.csv", TICKETS), "tickets",
                                IngestOptions(tz="Europe/Berlin"))
    t = result.tables["tickets"]
    assert counts.lines == 9 and counts.row_lines == 3 and counts.merged == 1 and counts.rejects == 3
    assert t.columns == ["ticket_id", "host", "opened", "closed", "component", "resolution", "line_no"]
    first = t.row(0, named=True)
    assert first["resolution"] == "replaced GPU 3, reseated riser" and first["ticket_id"] == "T-1"
    assert first["opened"] == datetime(2024, 1, 15, 9, 0)  # Berlin -> UTC
    still_open = t.filter(pl.col("ticket_id") == "T-2").row(0, named=True)
    assert still_open["closed"] is None and still_open["opened"] == datetime(2024, 1, 17, 8, 0)
    assert t.filter(pl.col("ticket_id") == "T-5")["resolution"][0] == "swapped DIMM A1\nand ran memtest"
    reasons = dict(zip(result.rejects["line_no"], result.rejects["reason"]))
    assert reasons[5] == "empty host" and "opened" in reasons[6] and "closed" in reasons[9]


def test_tickets_need_a_header(tmp_path):
    with pytest.raises(UnrecognisedFormat):
        parse_file(tickets.parse, _write(tmp_path, "t.csv", "gpu001,2024-01-01\n"), "tickets")


def test_topology(tmp_path):
    text = "Switch,Port,Host,HCA\nleaf01,Eth1/7,gpu001,mlx5_0\nleaf01,swp8,gpu002,\n,1/1/9,gpu003,mlx5_0\n"
    result, counts = parse_file(topology.parse, _write(tmp_path, "cabling.csv", text), "topology")
    topo = result.tables["topology"]
    assert counts.row_lines == 2 and counts.rejects == 1 and counts.skipped == 1
    assert topo["port"].to_list() == ["Eth1/7", "swp8"]  # as written
    assert topo["hca"].to_list() == ["mlx5_0", None]
    assert result.rejects["reason"][0] == "empty switch"


TELEMETRY = """\
time,host,metric,value,gpu
2024-01-15T10:00:00Z,gpu001,gpu_temp,65.5,0
1705312800,gpu001,gpu_temp,66,gpu1
1705312800000,gpu001,power,abc,
2024-01-15 11:00:00,"gpu002",power,300,
time,host,metric,value,gpu
,gpu001,x,1,
2024-01-15T10:00:00Z,gpu001,x,1
"""


def test_telemetry_csv(tmp_path):
    result, counts = parse_file(telemetry.parse, _write(tmp_path, "tel.csv", TELEMETRY), "telemetry",
                                IngestOptions(tz="Europe/Berlin"))
    tel = result.tables["telemetry"]
    assert counts.row_lines == 3 and counts.skipped == 2 and counts.rejects == 3
    assert tel["gpu"].to_list() == [0, 1, None] and tel["value"].to_list() == [65.5, 66.0, 300.0]
    assert tel["time"].to_list()[1] == datetime(2024, 1, 15, 10, 0)  # epoch seconds
    assert tel["time"].to_list()[2] == datetime(2024, 1, 15, 10, 0)  # naive local Berlin
    assert tel["host"][2] == "gpu002"
    reasons = dict(zip(result.rejects["line_no"], result.rejects["reason"]))
    assert reasons[4] == "non-numeric value 'abc'" and "time" in reasons[7] and "fields" in reasons[8]


def test_telemetry_host_from_file_name(tmp_path):
    text = "timestamp,metric,value\n2024-01-15T10:00:00Z,ecc_dbe,2\n"
    result, _ = parse_file(telemetry.parse, _write(tmp_path, "gpu009.csv", text), "telemetry")
    assert result.tables["telemetry"]["host"].to_list() == ["gpu009"]
    with pytest.raises(UnrecognisedFormat):
        parse_file(telemetry.parse, _write(tmp_path, "metrics.csv", text), "telemetry", host_hint=None)


def test_telemetry_parquet(tmp_path):
    path = tmp_path / "tel.parquet"
    pl.DataFrame({
        "Timestamp": [datetime(2024, 1, 15, 10, 0), datetime(2024, 1, 15, 10, 1), None],
        "node": ["gpu001", "gpu001", "gpu002"],
        "metric": ["sm_clock", "sm_clock", "power"],
        "value": ["1410", "n/a", "300"],
        "gpu": [0, 1, 2],
    }).write_parquet(path)
    ctx = ParseContext(path=path, source="telemetry", host_hint=None, options=IngestOptions(tz="Europe/Berlin"))
    result = telemetry.parse_parquet(path.read_bytes(), ctx)
    tel = result.tables["telemetry"]
    assert tel.height + result.rejects.height == 3  # every parquet row accounted for
    assert tel.row(0, named=True) == {"time": datetime(2024, 1, 15, 9, 0), "host": "gpu001", "metric": "sm_clock",
                                      "gpu": 0, "value": 1410.0, "line_no": 1}
    assert result.rejects["line_no"].to_list() == [2, 3]
    # a zone-aware column is converted, not shifted again
    pl.DataFrame({"time": pl.Series([datetime(2024, 1, 15, 10, 0)]).dt.replace_time_zone("UTC"),
                  "host": ["h"], "metric": ["m"], "value": [1.5]}).write_parquet(path)
    assert telemetry.parse_parquet(path.read_bytes(), ctx).tables["telemetry"]["time"][0] == datetime(2024, 1, 15, 10, 0)


def test_telemetry_carriage_return_costs_at_most_its_line(tmp_path):
    # before: a bare CR in a line with quotes raised csv.Error and the whole file was an error
    text = ("time,host,metric,gpu,value\n"
            '2024-01-15T10:00:00Z,gpu001,"sm\rclock",0,1410\n'
            '2024-01-15T10:00:00Z,gpu001,"power",1\r,300\n'
            "2024-01-15T10:00:00Z,gpu001,power,2,310\n")
    path = tmp_path / "tel.csv"
    path.write_bytes(text.encode())
    result, counts = parse_file(telemetry.parse, path, "telemetry")
    tel = result.tables["telemetry"]
    assert counts.lines == 4 and counts.rejects == 0 and tel["gpu"].to_list() == [0, 1, 2]
    assert tel["metric"].to_list() == ["sm clock", "power", "power"]


def _parquet(tmp_path, **columns):
    path = tmp_path / "tel.parquet"
    base = {"time": [datetime(2024, 1, 15, 10, 0)] * 2, "host": ["gpu001"] * 2, "metric": ["power"] * 2,
            "value": [300.0, 310.0]}
    pl.DataFrame({**base, **columns}).write_parquet(path)
    return path, ParseContext(path=path, source="telemetry", host_hint=None)


def test_telemetry_parquet_odd_column_types(tmp_path):
    # before: any nested, non-UTF-8 or duration column failed the file with a polars message
    path, ctx = _parquet(tmp_path, labels=[[1, 2], [3]], value=pl.Series([b"\xff\xfe", b"310"], dtype=pl.Binary))
    result = telemetry.parse_parquet(path.read_bytes(), ctx)
    assert result.tables["telemetry"]["value"].to_list() == [310.0]
    assert result.rejects.row(0) == (1, "2024-01-15 10:00:00.000000,gpu001,power,\ufffd\ufffd",
                                     "non-numeric value '\ufffd\ufffd'")
    path, ctx = _parquet(tmp_path, time=[timedelta(seconds=5)] * 2)
    assert telemetry.parse_parquet(path.read_bytes(), ctx).rejects["reason"].str.starts_with("unparseable time").all()
    path, ctx = _parquet(tmp_path, value=[[1.0], [2.0]])
    with pytest.raises(UnrecognisedFormat, match="column 'value' \\(value\\) holds List\\(Float64\\) values"):
        telemetry.parse_parquet(path.read_bytes(), ctx)


@pytest.mark.parametrize("sep", [",", "\t", "|"])
def test_quoted_lines_split_by_regex_as_the_csv_module_splits_them(sep):
    """split_lines reads lines of whole quoted fields in bulk (a port-counter CSV quotes every metric);
    whatever it reads, a line at a time through the csv module reads the same, stray quotes included."""
    import random

    from analysis.ingest.parsers.csvlines import _one_line, split_lines
    pieces = ["a", sep, '"', " ", "\r", '""', f'"{sep}"', "é", "\x1c", "\xa0", "\u2028", "x y"]
    rnd = random.Random(7)
    texts = ['t,gpu1,"node_infiniband_symbol_error_total{device=""mlx5_0"",port=""1""}",0'.replace(",", sep),
             f'{sep}""', f'""{sep}', f' "a"{sep}b', f'"a"b{sep}c', f'a"b{sep}c', '"a\rb"']
    texts += ["".join(rnd.choice(pieces) for _ in range(rnd.randint(1, 9))) for _ in range(3000)]
    texts = [t for t in texts if '"' in t]
    got = split_lines(pl.DataFrame({"line_no": range(len(texts)), "text": texts}), sep)
    assert got["line_no"].to_list() == list(range(len(texts)))
    assert got["fields"].to_list() == [_one_line(t, sep) for t in texts]
    metric = f'node_infiniband_symbol_error_total{{device="mlx5_0"{sep}port="1"}}'
    assert got["fields"][0].to_list() == ["t", "gpu1", metric, "0"]
