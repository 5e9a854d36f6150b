"""Every public sample we read, through the whole engine, with line accounting."""
import shutil
from datetime import datetime

import pytest

from analysis import sql, warehouse
from analysis.derive.jobs import build_jobs, map_switch_ports
from analysis.ingest.engine import ingest_directory
from analysis.sources import SOURCES
from analysis.ingest.parsers import nccl_tests

# dataset glob -> source folder
LAYOUT = {
    "gcm-slurm-fixtures/sample-sacct-*.txt": "slurm",
    "gpud-dmesg-fixtures/*.log": "kernel",
    "gpud-dmesg-fixtures/pstore-*.txt": "kernel",
    "loghub-hpc/*/*_2k.log": "kernel",
    "switch-syslog-nexus/*.log": "switch",
    "superbench-diagnosis/analyzer-fixtures/*results*.jsonl": "benchmarks",
    "superbench-diagnosis/raw-benchmark-logs/nccl_*.log": "benchmarks",
    "superbench-diagnosis/fleet-153-nodes/raw_data_153_nodes.csv": "benchmarks",
}


@pytest.fixture(scope="module")
def loaded(tmp_path_factory):
    from tests.conftest import DATASETS
    if not DATASETS.is_dir():
        pytest.skip("shared datasets not present")
    src = tmp_path_factory.mktemp("real") / "src"
    for pattern, folder in LAYOUT.items():
        (src / folder).mkdir(parents=True, exist_ok=True)
        for f in DATASETS.glob(pattern):
            shutil.copy(f, src / folder / f.name)
    con = warehouse.connect(src.parent / "w.duckdb")
    summary = ingest_directory(con, src)
    build_jobs(con)
    map_switch_ports(con)
    yield con, summary
    con.close()


def test_every_file_is_read_and_accounted(loaded):
    con, summary = loaded
    bad = [(o.path, o.status, o.message) for o in summary.outcomes if o.status not in ("ok", "duplicate")]
    assert bad == []
    for source in SOURCES:
        assert sql.query(con, "ingest/accounting_check_run", {"source": source, "since": datetime.min}).height == 0, source
    total = con.execute("SELECT sum(lines), sum(row_lines + rejects + skipped + merged) FROM ingested_files").fetchall()[0]
    assert total[0] == total[1] > 10_000


def test_specific_parsed_values(loaded):
    con, _ = loaded
    job = con.execute("SELECT state, n_nodes, n_gpus, len(nodes), nodes[1] FROM jobs WHERE job_id = '201729'").fetchall()
    assert job == [("FAILED", 128, 1024, 128, "node1083")]
    xid = con.execute("SELECT count(*), min(event_time), any_value(device) FROM node_events "
                      "WHERE kind = 'xid' AND code = '119' AND file LIKE '%xid-119%'").fetchall()[0]
    assert xid[0] == 5 and xid[1] == datetime(2025, 2, 23, 16, 24, 18) and xid[2] == "0000:9b:00"
    xid13 = con.execute("SELECT count(*) FROM node_events WHERE kind = 'xid' AND code = '13'").fetchall()[0][0]
    assert xid13 == 16
    # SuperBench's raw nccl-tests logs ran every rank 'on localhost': no node to credit them to, so rejected,
    # saying why (their values: test_benchmarks_parser.py, with the host given)
    nccl = con.execute("SELECT count(*), any_value(reason) FROM rejects WHERE file LIKE '%nccl_allreduce.log'").fetchall()
    assert nccl == [(35, nccl_tests.NO_HOST)]
    assert con.execute("SELECT count(*) FROM benchmark_results WHERE file LIKE '%nccl_allreduce.log'").fetchall() == [(0,)]
    link = con.execute("SELECT event_time, kind, code, device FROM node_events WHERE source = 'switch' "
                       "AND file LIKE '%test-nexus.log' AND line_no = 2").fetchall()
    assert link == [(datetime(2023, 5, 2, 12, 57, 15), "link_down", "ETHPORT-5-IF_DOWN_ADMIN_DOWN", "eth1/42")]
