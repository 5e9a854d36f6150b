"""Job logs: the parser on every line shape and on real logs, host placement, Aegis' distributed
attribution (peers named, links, lagging ranks), `goodput why`, and precision/recall on a
simulated cluster whose faults are mostly on the fabric."""
import json
import re
import shutil
from datetime import datetime, timedelta
from pathlib import Path

import polars as pl
import pytest
from click.testing import CliRunner

from analysis import sql, warehouse
from analysis.derive import metrics
from analysis.derive.joblogs import build_events
from analysis.derive.jobs import build_jobs
from analysis.derive.taxonomy import load
from analysis.ingest.contract import IngestOptions
from analysis.ingest.engine import ingest_directory
from analysis.ingest.parsers import joblogs
from analysis.simulate.config import preset
from analysis.simulate.run import simulate
from assets.pure_builds import build_all
from pipelines.cli import main
from reports.render import render_report
from tests.conftest import parse_file

FIX = Path(__file__).parent / "fixtures" / "joblogs"
SACCT = ("JobID|JobIDRaw|JobName|User|Partition|State|ExitCode|Submit|Start|End|NNodes|AllocTRES|NodeList\n"
         "7001|7001|train|ana|gpu|FAILED|1:0|2024-05-02T08:59:00|2024-05-02T09:00:00|2024-05-02T09:38:55|4|"
         "gres/gpu=8,node=4|node[01-04]\n")


def test_every_line_shape_is_read():
    result, counts = parse_file(joblogs.parse, FIX / "slurm-7002_3.out", "joblogs")
    rows = result.tables["job_log_lines"]
    assert counts.lines == counts.row_lines + counts.skipped and counts.skipped == 1  # "just program chatter"
    assert rows["job_id"].unique().to_list() == ["7002_3"]  # an array task
    kinds = rows.sort("line_no")["kind"].to_list()
    assert kinds == ["watchdog_timeout", "watchdog_timeout", "watchdog_position", "watchdog_position", "cuda_error",
                     "cuda_error", "exception", "exception", "exception", "srun_exit", "step_cancelled", "peer_error"]
    first = rows.row(0, named=True)  # PyTorch < 2.2: no time, no prefix
    assert (first["rank"], first["seq"], first["code"], first["timeout_ms"]) == (1, 469508, "ALLREDUCE", 1_800_000)
    pos = rows.filter(pl.col("line_no") == 4).row(0, named=True)
    assert (pos["rank"], pos["seq"], pos["enqueued"]) == (4, 610, 616)
    assert rows.filter(pl.col("line_no") == 2)["log_time"][0].strftime("%m-%d %H:%M:%S") == "12-06 18:44:12"
    cancelled = rows.filter(pl.col("kind") == "step_cancelled").row(0, named=True)
    assert (cancelled["host"], cancelled["code"]) == ("gpu-a-001", "NODE FAILURE")
    ib6 = rows.filter(pl.col("kind") == "peer_error").row(0, named=True)
    assert (ib6["host"], ib6["peer"], ib6["code"]) == ("H100-2", "fe80::966d:ae03:8b:df78%ib0", "4")
    assert rows.filter(pl.col("line_no") == 9)["code"][0] == "ValueError"  # not read as a host prefix
    # PyTorch's c10 logger does not pad the month: E318 is March 18
    assert rows.filter(pl.col("line_no") == 4)["log_time"][0].strftime("%m-%d %H:%M:%S") == "03-18 07:39:53"
    assert rows.filter(pl.col("line_no") == 5)["local_rank"][0] == 3  # torchrun's [default3]: a local rank


SRUN = [  # srun's own words (src/srun: "%s: %s: Exited with exit code %d" / "%s: %s: %s%s" with strsignal)
    ("srun: error: gpu0042: task 3: Exited with exit code 1", "gpu0042", [3], "1"),
    ("srun: error: node30: tasks 0-1: Exited with exit code 1", "node30", [0, 1], "1"),
    ("srun: error: frontier07200: tasks 0-7: Killed", "frontier07200", list(range(8)), "Killed"),
    ("srun: error: frontier07210: tasks 8-12,14-15: Aborted (core dumped)", "frontier07210",
     [8, 9, 10, 11, 12, 14, 15], "Aborted (core dumped)"),
    ("srun: error: nid001234: task 5: Terminated", "nid001234", [5], "Terminated"),
    ("srun: error: gpu-a-017: task 12: Out Of Memory", "gpu-a-017", [12], "Out Of Memory"),
    ("srun: error: node9: tasks 0-99999999: Killed", "node9", [None], "Killed"),  # garbled: one row, no task
    ("srun: error: node9: task 4294967296: Killed", "node9", [None], "Killed"),  # beyond the INTEGER column
]


@pytest.mark.parametrize("line,host,tasks,code", SRUN, ids=lambda v: v if isinstance(v, str) and " " not in v else None)
def test_srun_error_lines_name_each_task_and_its_host(tmp_path, line, host, tasks, code):
    path = tmp_path / "slurm-42.out"
    path.write_text(line + "\n")
    result, counts = parse_file(joblogs.parse, path, "joblogs")
    rows = result.tables["job_log_lines"]
    assert counts.row_lines == 1 and set(rows["kind"]) == {"srun_exit"}
    assert rows["task"].to_list() == tasks  # one row per task: the step's task -> host map
    assert set(rows["host"]) == {host} and set(rows["code"]) == {code}


# NCCL's WARN line as src/debug.cc prints it ("[%F %T] " stamp by default, then "host:pid:tid [dev] file:line", the
# newest with "(function)"), behind what launchers and container runtimes put before it; NCCL INFO lines stay out
NCCL_WARNS = [
    ("[2024-05-02 09:38:51] node03:5120:5171 [0] misc/socket.cc:538 NCCL WARN Net : Connection closed by remote peer "
     "node02<38810>", "node03", "peer_error", "2024-05-02 09:38:51"),
    ("[2024-05-02 09:38:51] node03:5120:5171 [0] misc/socket.cc:538 (socketProgressOpt) NCCL WARN socketProgressOpt: "
     "Call to recv from 10.9.0.2<38810> failed : Connection reset by peer", "node03", "connection_reset",
     "2024-05-02 09:38:51"),
    ("2024-05-02T09:38:51.001125857Z [2024-05-02 11:38:51] node03 [5] misc/socket.cc:46 NCCL WARN NET/IB : "
     "ibv_poll_cq failed", "node03", "nccl_warn", "2024-05-02 09:38:51"),
    ("[155] node03:5330:7970 [3] misc/ibvwrap.cc:284 NCCL WARN Call to ibv_modify_qp failed with error Invalid "
     "argument", "node03", "nccl_warn", None),
    ("[1,3]<stderr>:node03:5330:7970 [3] misc/ibvwrap.cc:284 NCCL WARN Call to ibv_modify_qp failed", None,
     "nccl_warn", None),
]


@pytest.mark.parametrize("line,host,kind,time", NCCL_WARNS,
                         ids=["nccl-stamp", "function", "kubectl-stamp", "rank-label", "openmpi-tag"])
def test_nccl_warn_lines_are_kept_whatever_comes_before_them(tmp_path, line, host, kind, time):
    path = tmp_path / "slurm-44.out"
    path.write_text(line + "\n" + line.replace("NCCL WARN", "NCCL INFO") + "\n")
    rows = parse_file(joblogs.parse, path, "joblogs", IngestOptions(tz="UTC"))[0].tables["job_log_lines"]
    assert rows.select("line_no", "host", "kind").rows() == [(1, host, kind)]
    assert (rows["log_time"][0] and rows["log_time"][0].strftime("%Y-%m-%d %H:%M:%S")) == time


def test_pytorch_23_traceback_prefix_keeps_its_rank(tmp_path):
    # PyTorch >= 2.3 prefixes an uncaught exception's lines with "[rankN]: " (a space after the colon)
    path = tmp_path / "slurm-43.out"
    path.write_text("[rank6]: Traceback (most recent call last):\n[rank6]: torch.distributed.DistStoreError: "
                    "Socket Timeout\n[default2]:[rank10]: ValueError: bad input\n")
    rows = parse_file(joblogs.parse, path, "joblogs")[0].tables["job_log_lines"]
    assert rows.select("kind", "code", "rank", "local_rank").rows() == [
        ("exception", "DistStoreError", 6, None), ("exception", "ValueError", 10, 2)]


def test_torchrun_failure_block_is_read():
    result, counts = parse_file(joblogs.parse, FIX / "slurm-7003.out", "joblogs")
    rows = result.tables["job_log_lines"]
    entries = rows.filter(pl.col("kind") == "elastic_failure")
    assert entries["code"].to_list() == ["failures", "time", "host", "rank", "exitcode", "root", "time", "host",
                                         "rank", "exitcode"] * 2
    hosts = entries.filter(pl.col("code") == "host")["host"].to_list()
    assert hosts == ["gpu0042.cluster.local"] * 2 + ["gpu0043.cluster.local"] * 2
    ranks = entries.filter(pl.col("code") == "rank").select("rank", "local_rank").rows()
    assert ranks == [(0, 0), (3, 3), (9, 1), (11, 3)]
    times = entries.filter(pl.col("code") == "time")["log_time"].dt.strftime("%H:%M:%S").to_list()
    assert times == ["14:22:32", "14:22:31", "14:32:32", "14:32:31"]  # the agent's local time (UTC here)
    ecc = rows.filter(pl.col("kind") == "cuda_error").row(0, named=True)
    assert (ecc["rank"], ecc["local_rank"], ecc["host"]) == (None, 3, None)  # nothing but its local rank
    watchdog = rows.filter(pl.col("line_no") == 40).row(0, named=True)  # [default3]:[rank11]:
    assert (watchdog["kind"], watchdog["rank"], watchdog["local_rank"]) == ("watchdog_timeout", 11, 3)
    assert (counts.row_lines, counts.skipped) == (29, 37)  # skipped: tracebacks' frames, the blocks' borders and traceback lines, agent chatter


def test_a_file_that_names_no_job_is_unrecognised(tmp_path):
    assert joblogs.job_id_for(Path("joblogs/train-42.out")) == "42"
    assert joblogs.job_id_for(Path("joblogs/1234/rank3.log")) == "1234"
    assert joblogs.job_id_for(Path("joblogs/output.txt")) is None
    src = tmp_path / "src"
    (src / "joblogs").mkdir(parents=True)
    (src / "joblogs" / "output.txt").write_text("NCCL WARN something\n")
    con = warehouse.connect(tmp_path / "w.duckdb")
    outcome = ingest_directory(con, src).outcomes[0]
    assert outcome.status == "unrecognised" and "slurm-<jobid>.out" in outcome.message


def _torchrun_cluster(tmp_path: Path, log: str, job: str = "7003", nodes: str = "gpu[0042-0043]") -> Path:
    src = tmp_path / "src"
    for d in ("slurm", "joblogs"):
        (src / d).mkdir(parents=True)
    (src / "slurm" / "sacct.txt").write_text(
        SACCT.splitlines()[0] + f"\n{job}|{job}|train|ana|gpu|FAILED|1:0|2024-03-05T12:59:00|2024-03-05T13:00:00|"
        f"2024-03-05T14:32:40|2|gres/gpu=16,node=2|{nodes}\n")
    (src / "joblogs" / f"slurm-{job}.out").write_text(log)
    return src


def _attributed(tmp_path: Path, src: Path):
    con = warehouse.connect(tmp_path / "w.duckdb")
    assert {o.status for o in ingest_directory(con, src).outcomes} == {"ok"}
    build_all(con, load())
    placed = dict(con.sql("SELECT line_no, host FROM node_events WHERE source = 'app'").fetchall())
    primary = con.sql("SELECT cause, host, rule, line_no FROM failure_attribution WHERE is_primary").fetchall()
    con.close()
    return placed, primary


def test_an_ecc_error_is_blamed_on_the_host_of_torchruns_root_cause(tmp_path):
    """No host prefix anywhere: the [default3]: ECC line is tied to its host only by the agents' ChildFailedError
    blocks (local rank 3 failed first on gpu0042, at 14:22:31; on gpu0043 ten minutes later, when its NCCL
    watchdog gave up). The ECC error wins over the downstream timeouts on the other host."""
    placed, primary = _attributed(tmp_path, _torchrun_cluster(tmp_path, (FIX / "slurm-7003.out").read_text()))
    assert placed[6] == "gpu0042"  # the ECC line
    assert placed[40] == placed[41] == "gpu0043"  # [rank11]:/[rank9]: through the entries' global ranks
    assert placed[39] == "gpu0042" and placed[66] == "gpu0043"  # srun's lines name their hosts (one event each)
    assert primary == [("gpu_memory", "gpu0042", "app-cuda-ecc", 6)]


def test_a_local_rank_that_failed_first_on_two_hosts_names_neither(tmp_path):
    """Both agents report local rank 3 as their first failure at the same second: the ECC line stays unplaced
    (no guess), and the job falls back to the distributed symptoms."""
    log = (FIX / "slurm-7003.out").read_text().replace("2024-03-05_14:32:31", "2024-03-05_14:22:31")
    placed, primary = _attributed(tmp_path, _torchrun_cluster(tmp_path, log))
    assert placed[6] is None
    assert primary[0][0] == "nccl_timeout"


@pytest.mark.parametrize("prefix", ["[rank2]:", "2: "])
def test_srun_error_lines_place_the_tasks_they_name(tmp_path, prefix):
    """srun ran the ranks itself, cyclically: task 2 is on gpu01, where a block distribution of the ranks seen
    (0-2 over two nodes) would put it on gpu02. The srun lines say where each task ran; a rank is its task
    (more tasks than nodes, no torchrun)."""
    log = (f"{prefix}RuntimeError: CUDA error: uncorrectable ECC error encountered\n"
           "srun: error: gpu01: tasks 0,2,4,6: Exited with exit code 1\n"
           "srun: error: gpu02: tasks 1,3,5,7: Killed\n")
    placed, primary = _attributed(tmp_path, _torchrun_cluster(tmp_path, log, "7004", "gpu[01-02]"))
    assert placed == {1: "gpu01", 2: "gpu01", 3: "gpu02"}
    assert primary == [("gpu_memory", "gpu01", "app-cuda-ecc", 1)]


def _real_logs() -> list[Path]:
    return sorted(p for p in (FIX / "real").iterdir() if p.suffix != ".md")


@pytest.mark.parametrize("path", _real_logs(), ids=lambda p: p.name)
def test_real_logs_every_line_accounted(path):
    result, counts = parse_file(joblogs.parse, path, "joblogs")
    assert counts.lines == counts.row_lines + counts.rejects + counts.skipped + counts.merged
    rows = result.tables["job_log_lines"]
    if path.name == "slurm-910001.out":  # DeepSpeed over pdsh: its rank map and Megatron's iterations
        ranks = rows.filter(pl.col("kind") == "rank_map").unique(["rank"])
        assert ranks.height == 16 and set(ranks["host"]) == {"vm-07-05", "vm-07-14"}
        assert rows.filter(pl.col("kind") == "progress")["code"].to_list() == ["1", "2", "3", "4", "5"]
    if path.suffix in (".err", ".log"):  # kernel and Fabric Manager lines: nothing a job log holds
        assert rows.filter(~pl.col("kind").is_in(["nccl_warn"])).height == 0


def test_shared_real_logs_every_line_accounted(tmp_path, datasets):
    """Every raw benchmark and dmesg log in ../shared/datasets read as a job log: nothing lost."""
    src = tmp_path / "src" / "joblogs"
    src.mkdir(parents=True)
    files = [*sorted((datasets / "superbench-diagnosis/raw-benchmark-logs").glob("*.log")),
             *sorted((datasets / "gpud-dmesg-fixtures").glob("*.log"))]
    for i, f in enumerate(files):
        shutil.copy(f, src / f"slurm-{800000 + i}.out")
    con = warehouse.connect(tmp_path / "w.duckdb")
    outcomes = ingest_directory(con, tmp_path / "src").outcomes
    assert len(outcomes) == len(files) and {o.status for o in outcomes} == {"ok"}
    assert sum(o.lines for o in outcomes) > 3000
    assert con.sql("SELECT count(*) FROM ingested_files WHERE lines <> row_lines + rejects + skipped + merged"
                   ).fetchall()[0][0] == 0
    assert sql.query(con, "ingest/accounting_check_run", {"source": "joblogs", "since": datetime.min}).height == 0


def _link_cluster(tmp_path: Path, addresses: str) -> Path:
    src = tmp_path / "src"
    for d in ("slurm", "joblogs", "topology"):
        (src / d).mkdir(parents=True)
    (src / "slurm" / "sacct.txt").write_text(SACCT)
    shutil.copy(FIX / "slurm-7001.out", src / "joblogs")
    if addresses == "topology":
        (src / "topology" / "cabling.csv").write_text(
            "switch,port,host,hca,ip\n" + "".join(f"leaf1,swp{i},node0{i},mlx5_0,10.9.0.{i}\n" for i in range(1, 5)))
    else:
        (src / "topology" / "hosts").write_text(
            "# IPoIB\n127.0.0.1 localhost\n" + "".join(f"10.9.0.{i}\tnode0{i}-ib node0{i}\n" for i in range(1, 5)))
    return src


@pytest.mark.parametrize("addresses", ["topology", "hosts"])
def test_a_link_failure_is_blamed_on_the_host_its_peers_name(tmp_path, addresses):
    src = _link_cluster(tmp_path, addresses)
    con = warehouse.connect(tmp_path / "w.duckdb")
    assert {o.status for o in ingest_directory(con, src).outcomes} == {"ok"}
    build_all(con, load())
    placed = dict(con.sql("SELECT line_no, host FROM node_events WHERE source = 'app'").fetchall())
    assert placed[16] == "node03"  # NCCL prefix with the FQDN, shortened to the node list's name
    assert placed[20] == "node03"  # [rank4] placed through NCCL's init lines
    peers = dict(con.sql("SELECT line_no, peer FROM node_events WHERE kind = 'peer_error'").fetchall())
    assert peers == {16: "node02", 18: "node03", 19: "node03"}
    primary = con.sql("SELECT cause, host, link, rule, line_no FROM failure_attribution WHERE is_primary").fetchall()
    assert primary == [("infiniband_link", "node03", None, "app-peer-error (named by 2 peers)", primary[0][4])]
    assert primary[0][4] in (18, 19)
    con.close()
    out = CliRunner().invoke(main, ["why", "7001", "--db", str(tmp_path / "w.duckdb")])
    assert out.exit_code == 0, out.output
    assert "on node03, rule app-peer-error (named by 2 peers)" in out.output
    assert f"deciding line: {(src / 'joblogs' / 'slurm-7001.out').resolve()}:{primary[0][4]}" in out.output
    assert "slurm-7001.out:16" in out.output  # every deciding log line, with file and line


def test_two_hosts_naming_each_other_are_a_link(tmp_path):
    src = _link_cluster(tmp_path, "topology")
    text = (FIX / "slurm-7001.out").read_text().splitlines()
    keep = [line for line in text if "node02:5120:5171" not in line]  # only node03 <-> node02... and node04
    keep = [line for line in keep if not line.startswith("6: node04:7300:7351")]
    keep.append("2: node02:5120:5171 [0] NCCL WARN NET/IB : Got completion from peer 10.9.0.3<38810> with error 12, "
                "opcode 0, len 0, vendor err 129 (Send)")
    (src / "joblogs" / "slurm-7001.out").write_text("\n".join(keep) + "\n")
    con = warehouse.connect(tmp_path / "w.duckdb")
    ingest_directory(con, src)
    build_all(con, load())
    assert con.sql("SELECT cause, host, link FROM failure_attribution WHERE is_primary").fetchall() == [
        ("infiniband_link", None, "node02<->node03")]


APP_EVENTS = "SELECT * FROM node_events WHERE source = 'app' ORDER BY file, line_no"


def _nightly(tmp_path: Path, src: Path, db: str) -> tuple[str, list]:
    """Ingest ``src`` into ``db`` and place its job logs: how the build went, and the events."""
    con = warehouse.connect(tmp_path / db)
    assert {o.status for o in ingest_directory(con, src).outcomes} <= {"ok", "unchanged"}
    build_jobs(con)
    built = build_events(con)["built"]
    events = con.sql(APP_EVENTS).fetchall()
    con.close()
    return built, events


def test_a_nightly_places_again_only_the_jobs_whose_logs_or_instances_changed(tmp_path):
    src = _link_cluster(tmp_path, "topology")
    built, day1 = _nightly(tmp_path, src, "nightly.duckdb")
    assert built == "all" and "node03" in {e[1] for e in day1}
    # day 2: job 7003 ended and its log came; a newer dump moves job 7001 (log unchanged) to other nodes
    first = SACCT.splitlines()[1]
    (src / "slurm" / "sacct2.txt").write_text("\n".join([
        SACCT.splitlines()[0], first.replace("node[01-04]", "node[05-08]"),
        "7003|7003|train|ana|gpu|FAILED|1:0|2024-03-05T12:59:00|2024-03-05T13:00:00|2024-03-05T14:32:40|2|"
        "gres/gpu=16,node=2|gpu[0042-0043]"]) + "\n")
    shutil.copy(FIX / "slurm-7003.out", src / "joblogs")
    for day, change in enumerate([None, "log re-read", "topology"], start=2):
        if change == "log re-read":
            with (src / "joblogs" / "slurm-7003.out").open("a") as log:
                log.write("srun: error: gpu0043: task 3: Killed\n")
        if change == "topology":
            (src / "topology" / "hosts").write_text("10.9.0.5\tnode05\n")
        built, events = _nightly(tmp_path, src, "nightly.duckdb")
        assert built == ("all" if change else "changed jobs"), change
        assert events == _nightly(tmp_path, src, f"fresh{day}.duckdb")[1], change  # what a build from scratch gives
        assert {e[11] for e in events} == {"7001", "7003"}
        moved = {e[1] for e in events if e[11] == "7001"} - {e[1] for e in day1}
        assert "node03" not in {e[1] for e in events} and moved, moved  # 7001 placed on its new nodes


def _sim_truth(root: Path, con) -> pl.DataFrame:
    truth = pl.read_csv(root / "truth/job_instances.csv", infer_schema_length=0).with_columns(pl.col("instance").cast(pl.Int32))
    logs = pl.read_csv(root / "truth/job_logs.csv", infer_schema_length=0).with_columns(pl.col("instance").cast(pl.Int32))
    pred = con.sql("SELECT job_id, instance, cause AS pred, host AS pred_host, link FROM failure_attribution "
                   "WHERE is_primary").pl()
    kernel = con.sql("SELECT DISTINCT j.job_id, j.instance, TRUE AS kernel FROM jobs j JOIN node_events e "
                     "ON list_contains(j.nodes, e.host) AND e.source = 'kernel' "
                     "AND e.event_time BETWEEN j.end_time - INTERVAL 10 MINUTE AND j.end_time + INTERVAL 5 MINUTE").pl()
    m = (truth.join(logs.select("job_id", "instance", "variant", "culprit_host"), on=["job_id", "instance"], how="left")
         .join(pred, on=["job_id", "instance"], how="left").join(kernel, on=["job_id", "instance"], how="left"))
    # the host the truth blames: the job log's culprit (none for a fabric-wide timeout), else the fault's host
    culprit = pl.when(pl.col("variant").is_not_null()).then(pl.col("culprit_host").replace("", None)).otherwise("cause_host")
    right_host = pl.when(culprit.is_null()).then(pl.col("pred_host").is_null() & pl.col("link").is_null()).otherwise(
        (pl.col("pred_host") == culprit) | pl.col("link").str.split("<->").list.contains(culprit)).fill_null(False)
    return m.with_columns(pl.col("kernel").fill_null(False), right=(pl.col("pred") == pl.col("cause")) & right_host)


def test_simulated_fabric_failures_are_attributed_to_the_right_cause_and_host(tmp_path):
    cfg = preset("small", nodes=128, days=14, seed=1, failure_rate=150.0, telemetry_jobs=0, lemon_share=0.0,
                 size_probs=(0.2, 0.1, 0.1, 0.1, 0.15, 0.15, 0.1, 0.1, 0.0, 0.0, 0.0),
                 cause_mix=(("nccl_timeout", 0.4), ("infiniband_link", 0.4), ("gpu_memory", 0.2)))
    simulate(cfg, tmp_path / "src")
    con = warehouse.connect(tmp_path / "w.duckdb")
    outcomes = [o for o in ingest_directory(con, tmp_path / "src").outcomes if o.source == "joblogs"]
    assert outcomes and {o.status for o in outcomes} == {"ok"}
    written = json.loads((tmp_path / "src/truth/summary.json").read_text())["job_log_lines"]
    assert sum(o.lines for o in outcomes) == written  # every line the simulator wrote was read
    assert con.sql("SELECT count(*) FROM ingested_files WHERE source = 'joblogs' AND "
                   "lines <> row_lines + rejects + skipped + merged").fetchall()[0][0] == 0
    build_all(con, load(), metrics.MetricsConfig())
    m = _sim_truth(tmp_path / "src", con)
    fabric = ["nccl_timeout", "infiniband_link"]
    scope = m.filter(pl.col("cause").is_in(fabric) & ~pl.col("kernel") & pl.col("state").is_in(["FAILED", "NODE_FAIL"]))
    variants = scope["variant"].value_counts()
    counts = dict(zip(variants["variant"], variants["count"]))
    assert counts.get("hang", 0) >= 15 and counts.get("fabric", 0) >= 5 and counts.get("link", 0) >= 5, counts
    predicted = m.filter(pl.col("pred").is_in(fabric) & ~pl.col("kernel"))
    precision, recall = predicted["right"].mean(), scope["right"].mean()
    assert precision >= 0.95 and recall >= 0.95, (precision, recall)
    # harmless NCCL WARNs and user tracebacks stay the user's
    users = m.filter(pl.col("variant") == "user")
    assert users.height >= 10 and (users["pred"] == "user").all()
    warned = con.sql("SELECT DISTINCT job_id FROM node_events WHERE kind = 'nccl_warn'").pl()["job_id"]
    assert m.filter(pl.col("job_id").is_in(warned.to_list()) & (pl.col("cause") == "user"))["pred"].drop_nulls().eq("user").all()
    # the report's failure-rate-by-cause breakdown counts them where the simulator put them
    shown = dict(con.sql("SELECT cause, sum(failures) FROM failure_rate_over_time GROUP BY cause").fetchall())
    for cause in fabric:
        # (plus REQUEUED instances a health check caught first: an infrastructure failure too, shown by the check)
        ended = pl.col("state").is_in(["FAILED", "NODE_FAIL"]) | ((pl.col("state") == "REQUEUED") & pl.col("right"))
        put = m.filter((pl.col("cause") == cause) & ended).height
        assert put >= 10 and 0.95 * put <= shown[cause] <= put / 0.95, (cause, put, shown)
    # C4: detection measured from the job logs (last progress line -> first watchdog timeout or error)
    logged = con.sql("SELECT sum(detection_from_logs), sum(reinit_from_logs) FROM run_downtime").fetchall()[0]
    assert logged[0] >= 20 and logged[1] >= 10, logged
    hung = con.sql("SELECT detection_s / interruptions FROM run_downtime WHERE detection_from_logs = interruptions "
                   "AND interruptions > 0").pl().to_series()
    assert hung.len() >= 1 and hung.max() >= 600  # a hang is noticed after the watchdog's timeout (600 s), not at once
    html = render_report(con, (cfg.start + timedelta(days=cfg.days - 1)).date(), tmp_path / "out").read_text()
    # 14 days: the 30-day rolling rate is not drawn yet, the report names the failures per cause so far in words
    assert '"failure_rate": ' not in html
    causes = set(re.findall(r'<span data-cause="([^"]+)">', html))
    assert set(fabric) <= causes, causes
    con.close()
