"""Job logs: the parser on every line shape and on real logs, host placement, Aegis' distributed
attribution (peers named, links, lagging ranks), `goodput why`, and precision/recall on a
simulated cluster whose faults are mostly on the fabric."""
import json
import shutil
from datetime import timedelta
from pathlib import Path

import polars as pl
import pytest
from click.testing import CliRunner

from analysis import metrics, warehouse
from analysis.chain import build_all
from analysis.ingest import ingest_directory
from analysis.parsers import joblogs
from analysis.simulate.config import preset
from analysis.simulate.run import simulate
from analysis.taxonomy import load
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
    assert con.execute(open("sql/accounting_check.sql").read(), {"source": "joblogs"}).fetchall() == []


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
    line = next(x for x in html.splitlines() if x.lstrip().startswith('"failure_rate": '))
    spec = json.loads(line.split(": ", 1)[1].rstrip(","))
    causes = {v.get("cause") for d in [spec, *spec.get("layer", [])] for v in d.get("data", {}).get("values", [])}
    if not causes:  # data sets at the top level of the spec
        causes = {v.get("cause") for values in spec.get("datasets", {}).values() for v in values}
    assert set(fabric) <= causes, causes
    con.close()
