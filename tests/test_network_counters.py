"""InfiniBand port counters: deltas through resets, wraps, saturation and a port that goes away."""
from datetime import datetime, timedelta

import polars as pl

from analysis.network import counters

T0 = datetime(2024, 3, 1)


def rows(series: dict[str, list[float | None]], host: str = "gpu0001") -> pl.DataFrame:
    out = []
    for metric, values in series.items():
        for i, v in enumerate(values):
            if v is not None:  # None: the port did not report at that scrape
                out.append({"time": T0 + timedelta(minutes=5 * i), "host": host, "metric": metric, "value": float(v)})
    return pl.DataFrame(out)


SYM = 'node_infiniband_symbol_error_total{device="mlx5_0",port="1"}'
DOWN = 'node_infiniband_link_downed_total{port="1",device="mlx5_0"}'
DATA = 'node_infiniband_port_data_transmitted_bytes_total{device="mlx5_1",port="1"}'


def test_resets_wraps_saturation_and_a_port_that_returns_give_no_negative_or_spurious_counts():
    d = counters.deltas(counters.series(rows({
        SYM: [100, 103, 103, 2, 5, None, None, 9, 65535, 65535, 0],  # reset to 2, away, back, saturates
        DOWN: [7, 7, 8, 8, 0, 0],  # a link down, then the driver reloads (reset to 0)
        DATA: [2 ** 64 - 2 ** 20, 500, 1500],  # a 64-bit counter wraps (values are doubles: exact to 2 KiB there)
        "node_infiniband_info{device=\"mlx5_0\"}": [1, 1],  # not a counter series this module reads
        "DCGM_FI_DEV_GPU_UTIL": [90, 91],
    })))
    assert (d["delta"] >= 0).all()
    sym = d.filter(pl.col("counter") == "symbol_error")["delta"].to_list()
    # 3, 0, reset->2, 3, back after 10 min ->4, up to saturation ->65526, saturated ->0, reset ->0
    assert sym == [3, 0, 2, 3, 4, 65526, 0, 0]
    assert d.filter(pl.col("counter") == "link_downed")["delta"].to_list() == [0, 1, 0, 0, 0]
    assert d.filter(pl.col("counter") == "port_data_transmitted_bytes")["delta"].to_list() == [2 ** 20 + 500, 1000]
    assert set(d["device"]) == {"mlx5_0", "mlx5_1"} and set(d["port"]) == {"1"}
    assert "info" not in set(d["counter"])


def test_deltas_over_thresholds_become_events_on_the_cabled_host():
    d = counters.deltas(counters.series(pl.concat([
        rows({SYM: [0, 40, 41], DOWN: [0, 0, 1]}),
        rows({'node_infiniband_symbol_error_total{device="sw",port="Eth1/7"}': [5, 5000]}, host="leaf03"),
    ])))
    topo = pl.DataFrame({"switch": ["leaf03"], "port_key": ["Eth1/7"], "host": ["gpu0042"]})
    ev = counters.port_events(d, topo)
    got = [(r["host"], r["code"], r["severity"], r["reporter"]) for r in ev.iter_rows(named=True)]
    assert got == [("gpu0001", "symbol_error", "warning", "gpu0001"),
                   ("gpu0042", "symbol_error", "critical", "leaf03"),
                   ("gpu0001", "link_downed", "critical", "gpu0001")]
    assert ev["message"][0] == "symbol_error +40 on mlx5_0/1 in 300 s" and ev["device"][0] == "mlx5_0/1"
    assert (ev["source"] == "network").all() and (ev["kind"] == "ib_port_errors").all()


def test_counters_under_network_are_ingested_differenced_and_become_node_events(tmp_path):
    from analysis import warehouse
    from analysis.ingest.engine import ingest_directory
    from analysis.network import run as network_run
    from analysis.derive.taxonomy import load

    src = tmp_path / "src"
    (src / "network").mkdir(parents=True)
    frame = rows({SYM: [0, 3, 60, 61], DOWN: [2, 2, 2, 3]})
    lines = ["time,host,metric,value"] + [f"{t.isoformat()}Z,{h},\"{m.replace(chr(34), chr(34) * 2)}\",{v}"
                                          for t, h, m, v in frame.iter_rows()]
    (src / "network" / "ib-counters.csv").write_text("\n".join(lines) + "\nnot,a,counter\n")
    con = warehouse.connect(tmp_path / "w.duckdb")
    summary = ingest_directory(con, src)
    [outcome] = summary.outcomes
    assert outcome.source == "network" and outcome.rows == frame.height and outcome.rejects == 1
    got = network_run.run(con)
    assert got == {"built": "all", "series": 2, "error_deltas": 4, "events": 2}
    events = con.sql("SELECT code, severity, device FROM node_events WHERE source = 'network' "
                     "ORDER BY event_time").fetchall()
    assert events == [("symbol_error", "warning", "mlx5_0/1"), ("link_downed", "critical", "mlx5_0/1")]
    assert network_run.run(con)["events"] == 0  # a rerun adds nothing
    assert con.sql("SELECT count(*) FROM node_events WHERE source = 'network'").fetchall()[0][0] == 2
    rules = load(None)
    assert {"port-link-downed", "port-errors"} <= set(rules.rules["rule_id"].to_list())
    con.close()


def test_perfquery_and_ibqueryerrors_text_become_counter_readings(tmp_path):
    """Both infiniband-diags outputs land as node_infiniband_* readings (every line accounted), and a
    perfquery rise between two readings becomes a port event on the host."""
    import shutil
    from pathlib import Path

    from analysis import warehouse
    from analysis.ingest.engine import ingest_directory
    from analysis.network import run as network_run

    fixtures = Path(__file__).parent / "fixtures" / "network"
    shutil.copytree(fixtures, tmp_path / "src" / "network", ignore=shutil.ignore_patterns("*.md"))
    con = warehouse.connect(tmp_path / "w.duckdb")
    outcomes = {Path(o.path).name: o for o in ingest_directory(con, tmp_path / "src").outcomes}
    pq, iq = outcomes["perfquery.txt"], outcomes["ibqueryerrors-2024-03-05.txt"]
    assert (pq.status, pq.rows, pq.rejects) == ("ok", 9, 0) and (iq.status, iq.rows) == ("ok", 3)
    got = con.sql("SELECT host, metric, value, time FROM telemetry ORDER BY line_no, metric").fetchall()
    assert ("gpu0007", 'node_infiniband_port_data_transmitted_bytes_total{device="",port="1"}', 2724 * 4.0,
            datetime(2024, 3, 4, 6, 0, 1)) in got  # data counts 4-byte words
    assert ("leaf-p1-r01", 'node_infiniband_link_downed_total{device="",port="7"}', 4.0,
            datetime(2024, 3, 5)) in got  # a switch's description; the time from the file name
    network_run.run(con)
    events = con.sql("SELECT host, code, severity FROM node_events WHERE source = 'network' ORDER BY code").fetchall()
    assert events == [("gpu0007", "port_receive_errors", "warning"), ("gpu0007", "symbol_error", "critical")]


def _csv(frame: pl.DataFrame) -> str:
    return "\n".join(["time,host,metric,value"] + [f"{t.isoformat()}Z,{h},\"{m.replace(chr(34), chr(34) * 2)}\",{v}"
                                                  for t, h, m, v in frame.iter_rows()]) + "\n"


def test_a_nightly_file_of_later_readings_extends_the_events_as_a_rebuild_would(tmp_path):
    from analysis import warehouse
    from analysis.ingest.engine import ingest_directory
    from analysis.network import run as network_run

    src = tmp_path / "src"
    (src / "network").mkdir(parents=True)
    day = rows({SYM: [0, 3, 60, 61, 61, 2000, 2001, 0, 40], DOWN: [2, 2, 2, 3, 3, 3, 3, 3, 4]})
    first, later, earlier = day.filter(pl.col("time") < T0 + timedelta(minutes=25)), \
        day.filter(pl.col("time") >= T0 + timedelta(minutes=25)), rows({SYM: [0]}).with_columns(
            pl.col("time") - timedelta(days=1))
    (src / "network" / "day1.csv").write_text(_csv(first))
    con = warehouse.connect(tmp_path / "w.duckdb")
    ingest_directory(con, src)
    assert network_run.run(con)["built"] == "all"
    (src / "network" / "day2.csv").write_text(_csv(later))
    ingest_directory(con, src)
    assert network_run.run(con)["built"] == "new readings"  # differenced against each series' last reading
    extended = con.sql("SELECT * EXCLUDE (file) FROM node_events WHERE source = 'network' ORDER BY line_no").fetchall()
    deltas = con.sql("SELECT * FROM port_counter_deltas ORDER BY ALL").fetchall()
    con.execute("DELETE FROM derived_marks")
    assert network_run.run(con)["built"] == "all"
    assert con.sql("SELECT * EXCLUDE (file) FROM node_events WHERE source = 'network' ORDER BY line_no").fetchall() \
        == extended and len(extended) == 5  # symbols +57, +1939, +40 after a reset; two link downs
    assert con.sql("SELECT * FROM port_counter_deltas ORDER BY ALL").fetchall() == deltas
    # a late file with a reading older than the stored ones: rebuilt, not appended out of order
    (src / "network" / "late.csv").write_text(_csv(earlier))
    ingest_directory(con, src)
    assert network_run.run(con)["built"] == "all"
    con.close()
