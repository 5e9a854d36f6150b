"""The shapes real exports take, under telemetry/ and network/: long CSV and Parquet with labels as columns,
and Prometheus' /api/v1/query_range JSON saved as it comes. Each lands in ``telemetry`` exactly as the
original long format (time,host,metric,value[,gpu]) does, so the counter events and the telemetry
detector see the same data.

Shapes as documented: the HTTP API answer (prometheus.io/docs/prometheus/latest/querying/api/:
{"status","data":{"resultType","result":[{"metric":{...},"values":[[<unix s>,"<value>"],...]}]}}, errors
{"status":"error","errorType","error"}); dcgm-exporter's labels (gpu, UUID, device="nvidia0", modelName,
Hostname, DCGM_FI_DRIVER_VERSION, pci_bus_id; instance and job added by Prometheus); node_exporter's
InfiniBand collector (node_infiniband_<counter>_total{device="mlx5_0",port="1"}).
"""
import gzip
import io
import json
import struct
from datetime import datetime, timedelta, timezone

import numpy as np
import polars as pl
import pytest

from analysis import warehouse
from analysis.ingest.contract import IngestOptions, ParseContext
from analysis.ingest.engine import ingest_directory
from analysis.ingest.lines import LineStream
from analysis.ingest.parsers import promjson, telemetry
from analysis.network import run as network_run
from analysis.telemetry import frames
from conftest import parse_file

T0 = datetime(2024, 3, 1, 10, 0)
UUIDS = {("gpu001", 0): "GPU-5f2a6c1e-0b7d-4a51-9c3e-1d2f3a4b5c6d", ("gpu001", 1): "GPU-8e9f0a1b-2c3d-4e5f-8a7b-6c5d4e3f2a1b",
         ("gpu002", 0): "GPU-1a2b3c4d-5e6f-4a7b-8c9d-0e1f2a3b4c5d", ("gpu002", 1): "GPU-9f8e7d6c-5b4a-4938-8776-655443322110"}


def dcgm_samples() -> list[dict]:
    """Two hosts x two GPUs x two DCGM gauges, every 10 s for 3 minutes; gpu002's GPU 1 runs hot."""
    out = []
    for h, host in enumerate(("gpu001", "gpu002")):
        for gpu in (0, 1):
            for i in range(18):
                hot = 40.0 if (host, gpu) == ("gpu002", 1) and i > 8 else 0.0
                out.append({"time": T0 + timedelta(seconds=10 * i), "host": host, "gpu": gpu, "labels": {},
                            "name": "DCGM_FI_DEV_GPU_UTIL", "value": float(90 + (i + gpu + h) % 7)})
                out.append({"time": T0 + timedelta(seconds=10 * i), "host": host, "gpu": gpu, "labels": {},
                            "name": "DCGM_FI_DEV_POWER_USAGE", "value": 300.25 + i + hot})
    return out


def ib_samples() -> list[dict]:
    """node_exporter InfiniBand counters every 5 minutes: symbol errors climb on gpu001, a link goes down on gpu002."""
    series = {("gpu001", "symbol_error"): [0, 3, 60, 61], ("gpu001", "link_downed"): [2, 2, 2, 2],
              ("gpu002", "symbol_error"): [7, 7, 7, 7], ("gpu002", "link_downed"): [1, 1, 2, 2],
              ("gpu002", "port_data_received_bytes"): [10 ** 12, 10 ** 12 + 4096, 2 * 10 ** 12, 2 * 10 ** 12 + 1]}
    return [{"time": T0 + timedelta(minutes=5 * i), "host": host, "gpu": None, "labels": {"device": "mlx5_0", "port": "1"},
             "name": f"node_infiniband_{counter}_total", "value": float(v)}
            for (host, counter), values in series.items() for i, v in enumerate(values)]


def prom_value(v: float) -> str:
    """As Prometheus prints a sample value (Go's strconv 'f' -1)."""
    return str(int(v)) if v.is_integer() else repr(v)


def prom_labels(s: dict) -> dict:
    """The labels Prometheus attaches: the exporter's, then instance and job from the scrape."""
    if s["gpu"] is not None:  # dcgm-exporter
        return {"__name__": s["name"], "gpu": str(s["gpu"]), "UUID": UUIDS[s["host"], s["gpu"]],
                "device": f"nvidia{s['gpu']}", "modelName": "NVIDIA H100 80GB HBM3", "Hostname": s["host"],
                "DCGM_FI_DRIVER_VERSION": "535.161.08", "pci_bus_id": f"00000000:{0x18 + s['gpu']:02X}:00.0",
                "instance": f"{s['host']}:9400", "job": "dcgm-exporter"}
    return {"__name__": s["name"], **s["labels"], "instance": f"{s['host']}:9100", "job": "node"}


def existing_csv(samples: list[dict]) -> str:
    """The original long format: labels written into the metric name by hand."""
    rows = ["time,host,metric,gpu,value"]
    for s in samples:
        metric = s["name"] + ("{" + ",".join(f'{k}="{v}"' for k, v in s["labels"].items()) + "}" if s["labels"] else "")
        metric = '"' + metric.replace('"', '""') + '"' if '"' in metric else metric
        rows.append(f"{s['time'].isoformat()}Z,{s['host']},{metric},{'' if s['gpu'] is None else s['gpu']},{s['value']!r}")
    return "\n".join(rows) + "\n"


def label_frame(samples: list[dict]) -> pl.DataFrame:
    """Long form with every label a column, as a PromQL-to-CSV/Parquet export writes it."""
    rows = [{"timestamp": s["time"].replace(tzinfo=timezone.utc), **prom_labels(s), "value": s["value"]} for s in samples]
    return pl.DataFrame(rows, infer_schema_length=None)


def label_csv(samples: list[dict]) -> str:
    frame = label_frame(samples)
    return frame.with_columns(pl.col("timestamp").dt.strftime("%Y-%m-%dT%H:%M:%SZ"),
                              pl.col("value").map_elements(prom_value, return_dtype=pl.Utf8)).write_csv()


def label_parquet(samples: list[dict]) -> bytes:
    buf = io.BytesIO()
    label_frame(samples).write_parquet(buf)
    return buf.getvalue()


def query_range(samples: list[dict], indent: int | None = None) -> str:
    """What /api/v1/query_range returns for these samples (curl's one line, or jq's indented text)."""
    result: dict[str, dict] = {}
    for s in samples:
        labels = prom_labels(s)
        series = result.setdefault(json.dumps(labels), {"metric": labels, "values": []})
        series["values"].append([s["time"].replace(tzinfo=timezone.utc).timestamp(), prom_value(s["value"])])
    doc = {"status": "success", "data": {"resultType": "matrix", "result": list(result.values())}}
    return json.dumps(doc, indent=indent, separators=None if indent else (",", ":"))


def ingest(tmp_path, name: str, folder: str, files: dict):
    src = tmp_path / name / "src"
    (src / folder).mkdir(parents=True)
    for file, content in files.items():
        path = src / folder / file
        path.write_bytes(content if isinstance(content, bytes) else content.encode())
    con = warehouse.connect(tmp_path / name / "w.duckdb")
    outcomes = {o.path.rsplit("/", 1)[-1]: o for o in ingest_directory(con, src).outcomes}
    return con, outcomes


def stored(con) -> list[tuple]:
    return con.sql("SELECT time, host, metric, gpu, value FROM telemetry ORDER BY host, metric, gpu, time").fetchall()


SHAPES = {
    "label.csv": label_csv,
    "label.parquet": label_parquet,
    "query_range.json": query_range,
    "query_range-jq.json.gz": lambda s: gzip.compress(query_range(s, indent=2).encode()),
}


def test_port_counters_in_every_shape_give_the_same_readings_and_events(tmp_path):
    samples = ib_samples()
    con, out = ingest(tmp_path, "original", "network", {"ib.csv": existing_csv(samples)})
    assert out["ib.csv"].rows == len(samples) and out["ib.csv"].rejects == 0
    expected, expected_run = stored(con), network_run.run(con)
    expected_events = con.sql("SELECT event_time, host, code, severity, device, message FROM node_events "
                              "ORDER BY ALL").fetchall()
    assert expected_run == {"built": "all", "series": 5, "error_deltas": 4, "events": 2}
    for file, write in SHAPES.items():
        con, out = ingest(tmp_path, file, "network", {file: write(samples)})
        assert (out[file].status, out[file].rows, out[file].rejects) == ("ok", len(samples), 0), out[file]
        assert stored(con) == expected, file
        assert network_run.run(con) == expected_run, file
        assert con.sql("SELECT event_time, host, code, severity, device, message FROM node_events "
                       "ORDER BY ALL").fetchall() == expected_events, file
    assert ('gpu001', 'node_infiniband_symbol_error_total{device="mlx5_0",port="1"}') in {r[1:3] for r in expected}


def test_port_counter_records_that_are_no_readings_are_rejected_under_network(tmp_path):
    samples = ib_samples()[:4]  # gpu001's symbol errors: 0, 3, 60, 61
    stale = struct.unpack("<d", struct.pack("<Q", 0x7FF0000000000002))[0]
    csv = label_csv(samples).splitlines()
    csv[2] = csv[2].replace(",3", ",NaN")  # timestamp,__name__,device,port,instance,job,value
    parquet = label_frame(samples).with_columns(value=pl.Series([0.0, 3.0, stale, 61.0]))
    buf = io.BytesIO()
    parquet.write_parquet(buf)
    answer = json.loads(query_range(samples))
    answer["data"]["result"][0]["values"][1][1] = "+Inf"
    error = {"status": "error", "errorType": "timeout", "error": "query timed out in expression evaluation"}
    con, out = ingest(tmp_path, "bad", "network", {
        "ib.csv": "\n".join(csv) + "\n", "ib.parquet": buf.getvalue(),
        "ib.json": json.dumps(answer) + "\n" + json.dumps(error) + "\n"})
    assert [(f, o.rows, o.rejects) for f, o in sorted(out.items())] == [
        ("ib.csv", 3, 1), ("ib.json", 3, 2), ("ib.parquet", 3, 1)]
    got = con.sql("SELECT regexp_extract(file, '[^/]+$') f, line_no, reason FROM rejects ORDER BY f, line_no").fetchall()
    assert got == [("ib.csv", 3, "value is NaN (no reading)"),
                   ("ib.json", 2, "value is +Inf (not a finite number)"),
                   ("ib.json", 5, "Prometheus answered with an error, not data: timeout: query timed out in "
                                  "expression evaluation"),
                   ("ib.parquet", 3, "Prometheus stale marker (the series ended: its target went away or stopped "
                                     "exporting it)")]
    hosts = con.sql("SELECT DISTINCT host, metric FROM telemetry").fetchall()
    assert hosts == [("gpu001", 'node_infiniband_symbol_error_total{device="mlx5_0",port="1"}')]


def test_dcgm_telemetry_in_every_shape_gives_the_detector_the_same_frame(tmp_path):
    samples = dcgm_samples()
    con, out = ingest(tmp_path, "original", "telemetry", {"dcgm.csv": existing_csv(samples)})
    expected = stored(con)
    rows = con.sql("SELECT time, host, metric, value FROM telemetry").pl()
    want = frames.build("j1", rows)
    assert want is not None and want.hosts == ["gpu001", "gpu002"]
    assert want.metrics == ["DCGM_FI_DEV_GPU_UTIL", "DCGM_FI_DEV_POWER_USAGE"]
    for file, write in SHAPES.items():
        con, out = ingest(tmp_path, file, "telemetry", {file: write(samples)})
        assert (out[file].status, out[file].rows, out[file].rejects) == ("ok", len(samples), 0), out[file]
        assert stored(con) == expected, file
        got = frames.build("j1", con.sql("SELECT time, host, metric, value FROM telemetry").pl())
        assert (got.hosts, got.metrics, got.t0, got.interval_s) == (want.hosts, want.metrics, want.t0, want.interval_s)
        np.testing.assert_array_equal(got.values, want.values)


def test_bad_values_are_rejected_with_their_reason_in_every_shape(tmp_path):
    good = dcgm_samples()[:4]
    odd = [("NaN", "value is NaN (no reading)"), ("+Inf", "value is +Inf (not a finite number)"),
           ("-Inf", "value is -Inf (not a finite number)"), ("n/a", "non-numeric value 'n/a'"),
           ("9223372036854775794", "DCGM blank value 9223372036854775794: the field is not supported, not found "
                                   "or not permitted on this GPU")]
    # label CSV: odd values as text, plus a row whose host labels are all empty
    csv = label_csv(good).splitlines()
    header, first = csv[0].split(","), csv[1].split(",")
    value_at = header.index("value")
    lines = csv + [",".join(first[:value_at] + [text] + first[value_at + 1:]) for text, _ in odd]
    no_host = [("" if header[i] in ("Hostname", "instance") else f) for i, f in enumerate(first)]
    lines.append(",".join(no_host))
    _, out = ingest(tmp_path, "csv", "telemetry", {"log.csv": "\n".join(lines) + "\n"})  # names no host
    assert (out["log.csv"].rows, out["log.csv"].rejects, out["log.csv"].lines) == (4, 6, 11)
    con = warehouse.connect(tmp_path / "csv" / "w.duckdb")
    reasons = [r[0] for r in con.sql("SELECT reason FROM rejects ORDER BY line_no").fetchall()]
    assert reasons[:5] == [why for _, why in odd] and reasons[5].startswith("no host")
    # query_range JSON: the same values as samples of one series; each sample is one record (line_no)
    doc = json.loads(query_range(good))
    values = doc["data"]["result"][0]["values"]
    doc["data"]["result"][0]["values"] = values + [[values[-1][0] + 10 * (i + 1), text] for i, (text, _) in enumerate(odd)]
    con, out = ingest(tmp_path, "json", "telemetry", {"odd.json": json.dumps(doc, separators=(",", ":"))})
    assert (out["odd.json"].rows, out["odd.json"].rejects, out["odd.json"].lines) == (4, 5, 9)
    got = con.sql("SELECT line_no, reason, raw FROM rejects ORDER BY line_no").fetchall()
    assert [r[0] for r in got] == [3, 4, 5, 6, 7]  # the series' two good samples are records 1 and 2
    assert [r[1] for r in got] == [why for _, why in odd]
    assert got[0][2].startswith('{"__name__":"DCGM_FI_DEV_GPU_UTIL","gpu":"0"') and got[0][2].endswith(', "NaN"]')


def test_parquet_labels_stale_markers_and_nested_columns(tmp_path):
    stale = struct.unpack("<d", struct.pack("<Q", 0x7FF0000000000002))[0]
    frame = pl.DataFrame({
        "time": [T0] * 4, "__name__": ["node_load1"] * 4, "instance": ["gpu001:9100", "[fe80::1]:9100", "gpu003", "gpu004"],
        "job": ["node"] * 4, "mode": ["idle", None, "", "user"], "value": [1.5, stale, float("nan"), 2.0],
        "nested": [[1], [2], [3], [4]]})
    path = tmp_path / "load.parquet"
    frame.write_parquet(path)
    result = telemetry.parse_parquet(path.read_bytes(), ParseContext(path=path, source="telemetry", host_hint=None))
    rows = result.tables["telemetry"]
    assert rows.select("host", "metric", "value", "line_no").rows() == [
        ("gpu001", 'node_load1{mode="idle"}', 1.5, 1), ("gpu004", 'node_load1{mode="user"}', 2.0, 4)]
    assert result.rejects.select("line_no", "reason").rows() == [
        (2, "Prometheus stale marker (the series ended: its target went away or stopped exporting it)"),
        (3, "value is NaN (no reading)")]
    assert result.rejects["raw"][0].startswith("2024-03-01 10:00:00.000000,node_load1,[fe80::1]:9100,node,,NaN")


def test_label_csv_host_gpu_and_kept_labels(tmp_path):
    text = ("time,host,hostname,instance,job,Hca,port,gpu,device,pod,exported_instance,metric,value\n"
            "2024-03-01T10:00:00Z,,node07,10.1.0.7:9100,node,mlx5_2,1,,,,x,node_infiniband_link_downed_total,4\n"
            "2024-03-01T10:00:00Z,,,node08:9400,dcgm,,,,nvidia3,trainer-0,,DCGM_FI_DEV_SM_CLOCK,1980\n"
            "2024-03-01T10:00:00Z,gpu009,,,,,,gpu2,eth0,,,node_network_receive_bytes_total,5\n"
            'time,host,hostname,instance,job,Hca,port,gpu,device,pod,exported_instance,metric,value\n'
            "2024-03-01T10:00:00Z,gpu010,,,,,,x1,,,,DCGM_FI_DEV_SM_CLOCK,5\n")
    path = tmp_path / "mixed.csv"
    path.write_text(text)
    result, counts = parse_file(telemetry.parse, path, "telemetry", host_hint=None)
    assert (counts.row_lines, counts.rejects, counts.skipped) == (3, 1, 2)
    assert result.tables["telemetry"].select("host", "metric", "gpu").rows() == [
        ("node07", 'node_infiniband_link_downed_total{device="mlx5_2",port="1"}', None),  # hca read as device
        ("node08", "DCGM_FI_DEV_SM_CLOCK", 3),  # device nvidia3 names the GPU; pod is the workload's
        ("gpu009", 'node_network_receive_bytes_total{device="eth0"}', 2)]
    assert result.rejects["reason"].to_list() == ["gpu 'x1' is not an integer index"]


def test_query_range_read_in_any_chunks_equals_read_whole():
    """Chunk boundaries anywhere (inside a number, a label, a multi-byte character) change nothing."""
    samples = dcgm_samples()[:40]
    doc = json.loads(query_range(samples))
    doc["data"]["result"][1]["metric"]["modelName"] = "NVIDIA H100 «SXM»"
    data = json.dumps(doc, ensure_ascii=False).encode()
    ctx = ParseContext(path=None, source="telemetry", host_hint=None)
    whole = promjson.parse_json([data], ctx)
    for size in (1, 7, 64, 1000):
        part = promjson.parse_json([data[i:i + size] for i in range(0, len(data), size)], ctx)
        assert part.tables["telemetry"].equals(whole.tables["telemetry"]) and part.records == whole.records == 40


def test_query_range_answers_of_every_kind(tmp_path):
    good = json.loads(query_range(dcgm_samples()[:2]))
    series = good["data"]["result"][0]
    vector = {"status": "success", "data": {"resultType": "vector", "result": [
        {"metric": series["metric"], "value": [1709287260.5, "93"]}]}}
    nameless = {"status": "success", "data": {"resultType": "matrix", "result": [
        {"metric": {"instance": "gpu001:9100"}, "values": [[1709287200, "0.5"]]}]}}
    histogram = {"status": "success", "data": {"resultType": "matrix", "result": [
        {"metric": {"__name__": "rpc_seconds", "instance": "gpu001:9100"},
         "histograms": [[1709287200, {"count": "2", "sum": "0.4", "buckets": [[0, "0.1", "0.2", "2"]]}]]}]},
        "warnings": ["PromQL warning: this is a native histogram"]}
    error = {"status": "error", "errorType": "bad_data", "error": "invalid parameter \"query\": 1:9: parse error"}
    scalar = {"status": "success", "data": {"resultType": "scalar", "result": [1709287200, "1"]}}
    polled = "\n".join(json.dumps(d) for d in (good, vector, error))  # a polling script appends one per line
    cut = json.dumps(good)[:-40]
    con, out = ingest(tmp_path, "kinds", "telemetry", {
        "polled.json": polled, "nameless.json": json.dumps(nameless), "histogram.json": json.dumps(histogram),
        "scalar.json": json.dumps(scalar), "cut.json": cut, "other.json": '{"host": "gpu001", "value": 1}\n',
        "empty.json": '{"status":"success","data":{"resultType":"matrix","result":[]}}'})
    assert (out["polled.json"].rows, out["polled.json"].rejects, out["polled.json"].lines) == (3, 1, 4)
    assert (out["cut.json"].status, out["cut.json"].rows, out["cut.json"].rejects) == ("ok", 1, 1)
    assert out["histogram.json"].message == "Prometheus warnings: PromQL warning: this is a native histogram"
    assert out["other.json"].status == "unrecognised" and "not a Prometheus API answer" in out["other.json"].message
    assert (out["empty.json"].status, out["empty.json"].lines) == ("ok", 0)
    assert "matched nothing" in out["empty.json"].message
    reasons = dict(con.sql("SELECT regexp_extract(file, '[^/]+$'), reason FROM rejects WHERE line_no IS NOT NULL")
                   .fetchall())
    assert reasons["polled.json"] == 'Prometheus answered with an error, not data: bad_data: invalid parameter "query": 1:9: parse error'
    assert reasons["nameless.json"].startswith("series without __name__") and "label_replace" in reasons["nameless.json"]
    assert reasons["histogram.json"].startswith("a native histogram sample")
    assert reasons["scalar.json"].startswith("a scalar result names no series")
    assert reasons["cut.json"].startswith("the document stops being a Prometheus answer at character")
    vector_row = con.sql("SELECT time, host, gpu, value FROM telemetry WHERE file LIKE '%polled.json' AND line_no = 3"
                         ).fetchall()
    assert vector_row == [(datetime(2024, 3, 1, 10, 1, 0, 500000), "gpu001", 0, 93.0)]
    again = ingest_directory(con, tmp_path / "kinds" / "src").outcomes
    assert {o.status for o in again} == {"unchanged"}  # re-reading adds nothing


def test_large_files_stream_and_respect_max_file_bytes(tmp_path):
    samples = ib_samples() * 3
    text = existing_csv(samples)
    path = tmp_path / "counters.csv"
    path.write_text(text)
    ctx = ParseContext(path=path, source="network", host_hint=None)
    whole = telemetry.parse(pl.DataFrame({"line_no": range(1, text.count("\n") + 1), "text": text.splitlines()}), ctx)
    chunked = telemetry.parse_stream(LineStream(path, chunk_bytes=500).frames(), ctx)  # header in the first chunk only
    assert chunked.tables["telemetry"].equals(whole.tables["telemetry"]) and chunked.skipped == whole.skipped == 1
    big = query_range(ib_samples())
    src = tmp_path / "src" / "network"
    src.mkdir(parents=True)
    (src / "ib.json").write_text(big)
    con = warehouse.connect(tmp_path / "w.duckdb")
    [outcome] = ingest_directory(con, tmp_path / "src", IngestOptions(max_file_bytes=len(big) - 1)).outcomes
    assert outcome.status == "error" and "max_file_bytes" in outcome.message


@pytest.mark.parametrize("element", [
    '{"metric":{"__name__":"up","instance":"gpu001:9100"},"values":[[1709287200,"1"],[1709287215,1],"x"]}',
    '{"values":[[1709287200,"1"]],"metric":{"__name__":"up","instance":"gpu001:9100"}}',
    '{"metric":{"__name__":"up","instance":"gpu001:9100"},"values":[[1709287200,"a,b"]]}'])
def test_other_writers_elements_take_the_slow_path_to_the_same_rules(element):
    """Elements beyond Prometheus' own shape (numbers as values, keys in another order, a value with a
    comma) are read by json.loads, by the same rules, sample by sample."""
    data = ('{"status":"success","data":{"resultType":"matrix","result":[' + element + "]}}").encode()
    result = promjson.parse_json([data], ParseContext(path=None, source="telemetry", host_hint=None))
    rows, rejects = result.tables["telemetry"], result.rejects
    assert rows.height + rejects.height == result.records and (rows["host"] == "gpu001").all()
    if '"x"' in element:
        assert rows["value"].to_list() == [1.0, 1.0] and rejects.select("line_no", "reason").rows() == [
            (3, 'not a sample ([<unix time>, "<value>"])')]
    elif "a,b" in element:
        assert rejects["reason"].to_list() == ["non-numeric value 'a,b'"]
    else:
        assert rows.select("metric", "value").rows() == [("up", 1.0)]
