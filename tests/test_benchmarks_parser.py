"""Benchmark parser on the real SuperBench samples and nccl-tests logs."""
import json

import polars as pl
import pytest

from analysis.model import UnrecognisedFormat
from analysis.parsers import benchmarks
from analysis.parsers.nccl_tests import op_from_name
from conftest import parse_file


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
    rows = parse_file(benchmarks.parse, path, "benchmarks")[0].tables["benchmark_results"]
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


@pytest.mark.parametrize("name", ["gpu_burn.log", "monitor.jsonl", "hpl_results.log"])
def test_unrecognised(datasets, name):
    with pytest.raises(UnrecognisedFormat, match="not"):
        parse_file(benchmarks.parse, _sb(datasets) / "raw-benchmark-logs" / name, "benchmarks")
