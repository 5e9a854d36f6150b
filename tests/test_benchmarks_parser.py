"""Benchmark parser on the real SuperBench samples and nccl-tests logs."""
import json
from datetime import datetime
from pathlib import Path

import polars as pl
import pytest

from analysis.ingest.contract import UnrecognisedFormat
from analysis.ingest.hosts import host_from_path
from analysis.ingest.parsers import benchmarks, nccl_tests
from analysis.ingest.parsers.nccl_tests import op_from_name
from conftest import FIXTURES, parse_file


def _sb(datasets):
    return datasets / "superbench-diagnosis"


def test_superbench_jsonl(datasets):
    path = _sb(datasets) / "analyzer-fixtures" / "test_results.jsonl"
    result, counts = parse_file(benchmarks.parse, path, "benchmarks")
    rows = result.tables["benchmark_results"]
    assert result.format == "superbench-jsonl" and counts.row_lines == 3 and counts.rejects == 0
    first = json.loads(path.read_text().splitlines()[0])
    numeric = [k for k, v in first.items() if isinstance(v, (int, float)) and not isinstance(v, bool)]
    node1 = rows.filter(pl.col("host") == "sb-validation-01")
    assert node1.height == len(numeric) == 462
    hit = node1.filter((pl.col("benchmark") == "kernel-launch") & (pl.col("metric") == "event_overhead")
                       & (pl.col("rank") == 0))
    assert hit["value"].to_list() == [pytest.approx(first["kernel-launch/event_overhead:0"])]
    bert = node1.filter(pl.col("metric") == "pytorch-bert-base/steptime_train_float32").row(0, named=True)
    assert bert["benchmark"] == "bert_models" and bert["rank"] is None
    assert bert["value"] == pytest.approx(114.59167010616511)
    assert rows["run_time"].null_count() == rows.height and rows["size_bytes"].null_count() == rows.height


def test_jsonl_samples_time_and_rejects(tmp_path):
    text = "\n".join([
        '{"node": "n1", "timestamp": "2024-01-15T10:00:00Z", "mem-bw/h2d_bw:3": 25.7, "x/steps": [1.0, 2.5], "x/s": "txt"}',
        '{"node": "n2", "x/flag": true}',
        '{"node": "n3", "x/',
        '{"nonode": 1, "x/y": 1}',
    ]) + "\n"
    path = tmp_path / "results.jsonl"
    path.write_text(text)
    result, counts = parse_file(benchmarks.parse, path, "benchmarks")
    rows = result.tables["benchmark_results"]
    assert counts.row_lines == 1 and counts.rejects == 3
    assert rows.filter(pl.col("metric") == "h2d_bw").row(0, named=True)["rank"] == 3
    assert rows.filter(pl.col("metric") == "steps")["sample_idx"].to_list() == [0, 1]
    assert str(rows["run_time"][0]) == "2024-01-15 10:00:00"


def test_superbench_wide_csv(datasets):
    path = _sb(datasets) / "fleet-153-nodes" / "raw_data_153_nodes.csv"
    result, counts = parse_file(benchmarks.parse, path, "benchmarks")
    rows = result.tables["benchmark_results"]
    raw = pl.read_csv(path, infer_schema_length=0)
    non_empty = sum(raw[c].drop_nulls().len() for c in raw.columns[1:])
    assert result.format == "superbench-csv" and counts.row_lines == 153 and counts.skipped == 1
    assert rows.height == non_empty
    node, key = raw["node"][0], "mem-bw/d2h_bw:4"
    want = float(raw.filter(pl.col("node") == node)[key][0])
    got = rows.filter((pl.col("host") == node) & (pl.col("benchmark") == "mem-bw")
                      & (pl.col("metric") == "d2h_bw") & (pl.col("rank") == 4))
    assert got["value"].to_list() == [pytest.approx(want)]
    assert rows.filter(pl.col("benchmark") == "nccl-bw:ib").height > 0  # ':' kept in the benchmark


@pytest.mark.parametrize("name", ["nccl_allgather.log", "nccl_allreduce.log", "nccl_alltoall.log",
                                  "nccl_broadcast.log", "nccl_reduce.log", "nccl_reducescatter.log"])
def test_nccl_logs(datasets, name):
    path = _sb(datasets) / "raw-benchmark-logs" / name
    result, counts = parse_file(benchmarks.parse, path, "benchmarks", host_hint="gpu001")
    rows = result.tables["benchmark_results"]
    assert result.format == "nccl-tests" and counts.rejects == 0
    assert counts.row_lines == 35  # 34 sizes (two size-0 rows) + the average line
    assert rows["benchmark"].unique().to_list() == [f"nccl-tests:{op_from_name(name)}"]
    assert rows["host"].unique().to_list() == ["gpu001"]  # ranks run 'on localhost'
    assert rows.filter(pl.col("metric") == "busbw_oop").height == 34


def test_nccl_allreduce_values(datasets):
    path = _sb(datasets) / "raw-benchmark-logs" / "nccl_allreduce.log"
    rows = parse_file(benchmarks.parse, path, "benchmarks", host_hint="gpu001")[0].tables["benchmark_results"]
    big = rows.filter(pl.col("size_bytes") == 8589934592)
    assert dict(zip(big["metric"], big["value"])) == {
        "time_us_oop": 63896.0, "algbw_oop": 134.44, "busbw_oop": 235.26,
        "time_us_ip": 63959.0, "algbw_ip": 134.30, "busbw_ip": 235.03}
    assert rows.filter(pl.col("metric") == "avg_busbw")["value"].to_list() == [68.4048]
    assert rows.filter(pl.col("metric") == "avg_busbw")["size_bytes"].to_list() == [None]


def test_nccl_hosts_and_op_names(tmp_path):
    assert op_from_name("all_reduce_perf.log") == "allreduce"
    assert op_from_name("reduce_scatter_perf.out") == "reducescatter"
    assert op_from_name("run.log") is None
    text = ("#  Rank  0 Group  0 Pid  1 on node-b device  0 [0x1b] NVIDIA H100\n"
            "#  Rank  8 Group  0 Pid  2 on node-a device  0 [0x1b] NVIDIA H100\n"
            "#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw #wrong\n"
            "        1024           256     float     sum      -1    30.10    0.03    0.06      0    29.90    0.03    0.06      0\n"
            "Segmentation fault (core dumped)\n")
    path = tmp_path / "run.log"
    path.write_text(text)
    result, counts = parse_file(benchmarks.parse, path, "benchmarks")
    rows = result.tables["benchmark_results"]
    assert rows["host"].unique().to_list() == ["node-a,node-b"] and rows["benchmark"][0] == "nccl-tests"
    assert counts.rejects == 1 and "unrecognised" in result.rejects["reason"][0]


def test_nccl_output_naming_no_host_is_rejected_not_credited_to_its_folder(datasets, tmp_path):
    # benchmarks/<run>/: the folder is a run, not a host (issue 23: a host 'nccl-run1' in goodput check)
    assert host_from_path(Path("benchmarks/nccl-run1/all_reduce_perf.log")) is None
    assert host_from_path(Path("benchmarks/gpu006/all_reduce_perf.log")) is None
    assert host_from_path(Path("kernel/gpu006/dmesg.log")) == "gpu006"
    path = _sb(datasets) / "raw-benchmark-logs" / "nccl_allreduce.log"  # SuperBench's: every rank 'on localhost'
    result, counts = parse_file(benchmarks.parse, path, "benchmarks")
    assert result.tables["benchmark_results"].height == 0 and counts.rejects == 35  # 34 sizes + the average
    assert result.rejects["reason"].unique().to_list() == [nccl_tests.NO_HOST]
    assert "no host" in nccl_tests.NO_HOST and "Rank" in nccl_tests.NO_HOST


@pytest.mark.parametrize("name", ["gpu_burn.log", "monitor.jsonl", "hpl_results.log"])
def test_unrecognised(datasets, name):
    with pytest.raises(UnrecognisedFormat, match="not"):
        parse_file(benchmarks.parse, _sb(datasets) / "raw-benchmark-logs" / name, "benchmarks")


NCCL_HEADER = ("#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw"
               "   busbw #wrong\n")
NCCL_ROW = ("        1024           256     float     sum      -1    30.10    0.03    0.06      0    29.90    0.03"
            "    0.06      0\n")


@pytest.mark.parametrize("cut, cells", [(3, 3), (9, 9), (12, 12)])
def test_nccl_truncated_row_is_one_reject(tmp_path, cut, cells):
    # a run killed mid-row; before: "gather indices are out of bounds" lost the whole file (3 tokens),
    # or a 12-token row was stored shifted by one column (time_us_oop = -1, the root)
    short = "  ".join(NCCL_ROW.split()[:cut]) + "\n"
    path = tmp_path / "all_reduce_perf.log"
    path.write_text(NCCL_HEADER + NCCL_ROW + short + "# Avg bus bandwidth    : 0.06\n")
    result, counts = parse_file(benchmarks.parse, path, "benchmarks", host_hint="gpu001")
    rows = result.tables["benchmark_results"]
    assert counts.rejects == 1 and counts.row_lines == 2 and counts.skipped == 1
    assert result.rejects["reason"].to_list() == [f"nccl-tests data row with {cells} of 13 columns"]
    assert rows.filter(pl.col("metric") == "time_us_oop")["value"].to_list() == [30.10]


def test_nccl_non_numeric_and_extra_cells_are_rejected(tmp_path):
    bad_value = NCCL_ROW.replace("30.10", "30.1O")
    extra = NCCL_ROW.rstrip("\n") + "   junk\n"
    path = tmp_path / "all_reduce_perf.log"
    path.write_text(NCCL_HEADER + bad_value + extra + "   2048  512  float  sum  -1  9" + "9" * 30 + " 1 1 0 1 1 1 0\n")
    result, counts = parse_file(benchmarks.parse, path, "benchmarks", host_hint="gpu001")
    assert counts.row_lines == 1 and counts.rejects == 2  # a 31-digit time is a number, just a large one
    assert result.rejects["reason"].to_list() == [
        "nccl-tests data row with a non-numeric time, algbw, busbw or #wrong value",
        "nccl-tests data row with 14 of 13 columns"]


def test_nccl_current_layout_real_sample():
    # nccl-tests 2.18.3 prints 'redop root' for every op ('none -1'); see tests/fixtures/nccl/SOURCES.md
    path = FIXTURES / "nccl" / "all_gather_perf_2.18.log"
    result, counts = parse_file(benchmarks.parse, path, "benchmarks")
    rows = result.tables["benchmark_results"]
    assert counts.rejects == 0 and counts.row_lines == 4 and counts.lines == counts.row_lines + counts.skipped
    assert rows["benchmark"][0] == "nccl-tests:allgather" and rows["host"][0] == "spark-4440,spark-fb97"
    big = rows.filter(pl.col("size_bytes") == 4294967296)
    assert dict(zip(big["metric"], big["value"])) == {
        "time_us_oop": 96986.7, "algbw_oop": 44.28, "busbw_oop": 22.14,
        "time_us_ip": 95610.9, "algbw_ip": 44.92, "busbw_ip": 22.46}
    assert rows.filter(pl.col("metric") == "avg_busbw")["value"].to_list() == [21.4033]


def test_nccl_columns_found_by_name(tmp_path):
    # header and row shapes as nccl-tests' writeResultHeader/writeBenchmarkLine* print them: an optional
    # '#bitdiff' column per group and a trailing 'timestamp' (strftime "%Y-%m-%d %H:%M:%S", two tokens)
    header = ("#       size         count      type   redop    root     time   algbw   busbw  #wrong  #bitdiff"
              "     time   algbw   busbw  #wrong  #bitdiff"
              "           timestamp\n")
    row = ("     1048576        262144     float     sum      -1    52.94   19.81   14.85       0         0"
           "    53.47   19.61   14.71       0         0"
           "  2025-06-01 12:00:05\n")
    path = tmp_path / "all_reduce_perf.log"
    unstamped = row.replace("  2025-06-01 12:00:05", "")  # per-iteration mode names the column, prints none
    path.write_text(header + row + unstamped + unstamped.rsplit(" ", 1)[0] + "\n")
    result, counts = parse_file(benchmarks.parse, path, "benchmarks", host_hint="gpu001")
    rows = result.tables["benchmark_results"]
    assert counts.row_lines == 2
    assert result.rejects["reason"].to_list() == ["nccl-tests data row with 14 of 15 columns"]
    assert rows.filter(pl.col("metric") == "time_us_ip")["value"].to_list() == [53.47, 53.47]
    assert rows.group_by("line_no").agg(pl.col("run_time").first()).sort("line_no")["run_time"].to_list() == [
        datetime(2025, 6, 1, 12, 0, 5), None]


def test_nccl_data_before_any_header(tmp_path):
    path = tmp_path / "all_reduce_perf.log"
    path.write_text("# nThread 1 nGpus 8 minBytes 8 maxBytes 128\n" + NCCL_ROW + NCCL_HEADER + NCCL_ROW)
    result, counts = parse_file(benchmarks.parse, path, "benchmarks", host_hint="gpu001")
    assert counts.row_lines == 1 and "before any column header" in result.rejects["reason"][0]


def _jsonl_file(tmp_path, bad_lines, good=200):
    lines = [json.dumps({"node": f"n{i:03d}", "a/x:0": float(i), "a/steps": [1.0, 2.0]}) for i in range(good)]
    for at, text in bad_lines:
        lines.insert(at, text)
    path = tmp_path / "results-summary.jsonl"
    path.write_text("\n".join(lines) + "\n")
    return path


def test_jsonl_hostile_lines_are_rejected_not_the_file(tmp_path):
    # before: OverflowError (400-digit integer) or RecursionError (100000 '[') failed the whole file
    path = _jsonl_file(tmp_path, [
        (50, '{"node": "big", "a/x:0": ' + "9" * 400 + "}"),
        (100, '{"node": "deep", "a/x:0": ' + "[" * 100000 + "}"),
        (150, '{"node": "cut", "a/x:0": 1.'),
        (160, '{"node": "two", "a/x:0": 1} {"node": "objects"}'),
        (170, '{"node": "inf", "a/x:0": 1e400}'),
        (180, '["node", "a list"]'),
        (190, '{"node": "n\\ud800", "a/x:0": NaN}'),  # NaN: read by json.loads, which keeps the lone surrogate
    ])
    result, counts = parse_file(benchmarks.parse, path, "benchmarks")
    reasons = dict(zip(result.rejects["line_no"], result.rejects["reason"]))
    assert counts.row_lines == 200 and counts.rejects == 7
    assert reasons == {
        51: "number too large (beyond the range of a 64-bit float)",
        101: "JSON nested deeper than 64 levels",
        151: "invalid JSON: the line ends before the object is closed (cut off?)",
        161: "invalid JSON: text after the end of the object (character 29)",
        171: "number too large (beyond the range of a 64-bit float)",
        181: "not a JSON object ({...})",
        191: "invalid JSON: a \\u escape holds half of a UTF-16 surrogate pair"}
    assert result.tables["benchmark_results"].height == 600  # 200 nodes x (1 value + 2 samples)


def test_jsonl_lines_polars_cannot_decode_are_read_exactly(tmp_path):
    # Python's json module (SuperBench's writer) emits NaN; a key may hold a number on one line and a
    # string on another, or a list on one and a scalar on another: such lines are read one by one
    path = _jsonl_file(tmp_path, [
        (10, '{"node": "nan", "a/x:0": NaN, "a/y": 2.5}'),
        (20, '{"node": "str", "a/x:0": "fast", "a/steps": "n/a", "a/y": 1}'),
        (30, '{"node": "numstr", "a/x:0": "7.5"}'),
        (40, '{"node": "scalar", "a/steps": 3.0}'),
    ])
    result, counts = parse_file(benchmarks.parse, path, "benchmarks")
    rows = result.tables["benchmark_results"]
    assert counts.rejects == 1 and result.rejects["line_no"].to_list() == [31]  # "7.5" is text, not a value
    assert rows.filter(pl.col("host") == "nan").select("metric", "value").rows() == [("y", 2.5)]
    assert rows.filter(pl.col("host") == "str").select("metric", "value").rows() == [("y", 1.0)]
    assert rows.filter(pl.col("host") == "scalar").select("metric", "sample_idx", "value").rows() == [
        ("steps", None, 3.0)]
    assert rows["line_no"].is_sorted() and rows.height == 600 + 3


def test_jsonl_node_must_be_a_name_and_long_rank_digits_stay_in_the_metric(tmp_path):
    path = tmp_path / "results.jsonl"
    path.write_text('{"node": "n1", "a/x:0": 1, "a/x:99999999999": 2}\n{"node": {"a": 1}, "a/x": 1}\n'
                    '{"node": "", "host": "n3", "a/x": 3}\n')
    result, counts = parse_file(benchmarks.parse, path, "benchmarks")
    rows = result.tables["benchmark_results"]
    # before: an 11-digit rank suffix failed the whole file (Int32 cast)
    assert rows.select("host", "metric", "rank").rows() == [("n1", "x", 0), ("n1", "x:99999999999", None),
                                                             ("n3", "x", None)]
    assert result.rejects["reason"].to_list() == ["JSON object without a 'node' key (a host name)"]
