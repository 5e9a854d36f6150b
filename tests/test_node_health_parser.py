"""node_health/ parser: NVSentinel HealthEvents (flat and CloudEvents, fixtures from NVIDIA/NVSentinel: see
tests/fixtures/node_health/SOURCES.md), their classification by the taxonomy, and a `goodput run` that blames a
failed job on an NVSentinel XID as it would on the same dmesg line."""
import json
import shutil
from datetime import datetime
from pathlib import Path

import duckdb
import polars as pl
from click.testing import CliRunner

from analysis import warehouse
from analysis.derive import attribution
from analysis.derive.taxonomy import load
from analysis.ingest.parsers import node_health
from analysis.sources import SOURCES
from conftest import parse_file
from pipelines.cli import main
from pipelines.runner import EXIT_OK
from tests.test_taxonomy import _events

FIXTURES = Path(__file__).parent / "fixtures" / "node_health"


def _write(tmp_path, name, text):
    path = tmp_path / name
    path.write_text(text)
    return path


def test_nvsentinel_health_events_documented_shape(tmp_path):
    path = shutil.copy(FIXTURES / "nvsentinel_adr049.jsonl", tmp_path / "events-2025-01-15.jsonl")
    result, counts = parse_file(node_health.parse, Path(path), "node_health")
    ev = result.tables["node_events"]
    assert counts.row_lines == 3 and counts.rejects == 1 and counts.skipped == 0
    assert ev["host"].to_list() == ["gpu-node-07"] * 3 and set(ev["source"]) == {"node_health"}
    assert ev["code"].to_list() == ["FabricManagerServiceDown", "FabricStateUnhealthy", "GpuServiceDown"]
    # Fabric Manager down is a service down; a fabric state unhealthy is the NVLink fabric
    assert ev["kind"].to_list() == ["services", "nvlink", "services"]
    assert ev["severity"].to_list() == ["critical", "critical", "warning"]  # isFatal, else an action is asked
    assert ev["event_time"].to_list() == [datetime(2025, 1, 15, 10, 30), datetime(2025, 1, 15, 10, 31),
                                          datetime(2025, 1, 15, 10, 32, 0, 500000)]
    assert ev["device"].to_list() == [None, "GPU7", None]  # the entity named (a NODE entity is no device)
    assert ev["reporter"].to_list() == ["system-services-monitor"] * 3
    msg = ev["message"][0]
    assert msg.startswith("Fabric Manager is failed on gpu-node-07") and "action RESTART_BM" in msg
    assert "errorCode FABRIC_MANAGER_NOT_RUNNING" in msg and "check FabricManagerServiceDown" in msg
    assert "action CONTACT_SUPPORT" in ev["message"][2]
    assert result.rejects["reason"].to_list() == ["no time (generatedTimestamp, or a CloudEvent's time)"]
    assert result.rejects["line_no"].to_list() == [4]


def test_nvsentinel_cloudevents_xids_and_recovery(tmp_path):
    path = shutil.copy(FIXTURES / "nvsentinel_cloudevents.jsonl", tmp_path / "cloudevents.jsonl")
    result, counts = parse_file(node_health.parse, Path(path), "node_health")
    ev = result.tables["node_events"]
    assert counts.row_lines == 2 and counts.rejects == 0
    # errorCode ["XID_48", "XID_79"]: one xid row per code, like two 'NVRM: Xid' lines
    assert ev.select("kind", "code", "severity", "device").rows() == [
        ("xid", "48", "critical", "0000:17:00"), ("xid", "79", "critical", "0000:17:00"),
        ("health_ok", "XidError", "ok", "0000:17:00")]
    assert ev["line_no"].to_list() == [1, 1, 2] and set(ev["host"]) == {"gpu-node-42"}
    assert "action RESTART_VM" in ev["message"][0]  # the enum's NAME as the exporter wrote it
    assert "action RESTART_VM" in ev["message"][2]  # its number (15), as the other revision writes it
    assert ev["event_time"][2] == datetime(2025, 1, 15, 10, 31)  # {seconds, nanos}


def test_shapes_codes_and_rejects(tmp_path):
    base = {"checkName": "GpuXidError", "componentClass": "GPU", "isFatal": False, "isHealthy": False,
            "message": "xid", "generatedTimestamp": "2025-01-15T10:30:00Z", "nodeName": "n1"}
    lines = [
        {**base, "errorCode": "79", "recommendedAction": 1},  # legacy: errorCode a string, NODE_REBOOT=1
        {**base, "checkName": "GpuNvlinkWatch", "errorCode": ["DCGM_FR_NVLINK_DOWN"], "recommendedAction": 0,
         "entitiesImpacted": [{"entityType": "GPU_UUID", "entityValue": "GPU-abc"}]},
        {**base, "checkName": "GpuThermalWatch", "isFatal": True, "recommendedAction": "CUSTOM",
         "customRecommendedAction": "call-vendor"},
        {"specversion": "1.0", "type": "com.nvidia.nvsentinel.health.v1", "time": "2025-01-15T11:00:00Z",
         "data": {"healthEvent": {**{k: v for k, v in base.items() if k != "generatedTimestamp"},
                                  "checkName": "SysLogsSXIDError", "errorCode": ["20034"], "isFatal": True}}},
        {**base, "nodeName": None},
        {**base, "generatedTimestamp": "2999-01-01T00:00:00Z"},
        {**base, "generatedTimestamp": "soon"},
        {"kind": "Pod", "metadata": {}},
    ]
    text = "\n".join(json.dumps(x) for x in lines) + '\n\n{"checkName": "x", "nodeName": \n'
    result, counts = parse_file(node_health.parse, _write(tmp_path, "events-2025-01-15.jsonl", text), "node_health")
    ev = result.tables["node_events"]
    assert counts.row_lines == 4 and counts.rejects == 5 and counts.skipped == 1
    assert ev.select("kind", "code", "severity").rows() == [
        ("xid", "79", "warning"), ("nvlink", "GpuNvlinkWatch", "info"), ("thermal", "GpuThermalWatch", "critical"),
        ("sxid", "20034", "critical")]  # an NVSwitch SXID, as the kernel's SXid line is
    assert "action NODE_REBOOT" in ev["message"][0] and "action CUSTOM call-vendor" in ev["message"][2]
    assert ev["device"][1] == "GPU-abc" and ev["event_time"][3] == datetime(2025, 1, 15, 11)  # the CloudEvent's time
    reasons = dict(zip(result.rejects["line_no"], result.rejects["reason"]))
    assert reasons[5] == "no nodeName and no host in the file name"  # a dated daily file names no host
    assert "outside the years" in reasons[6] and reasons[7] == "unparseable time 'soon'"
    assert reasons[8].startswith("not a health event") and reasons[10].startswith("invalid JSON")


# gpud lines written here from the field names of leptonai/gpud api/v1/types.go (HealthState, Event, SuggestedActions,
# RepairActionType): gpud's licence could not be verified, so none of its example text is copied
GPUD = """\
{"component": "accelerator-nvidia-error-xid", "time": "2025-03-02T08:00:00Z", "states": [{"name": "error_xid", "health": "Unhealthy", "reason": "XID 48 detected on PCI:0000:3B:00", "suggested_actions": {"repair_actions": ["HARDWARE_INSPECTION"]}}]}
{"component": "accelerator-nvidia-error-xid", "events": [{"time": "2025-03-02T07:58:00Z", "name": "error_xid", "type": "Fatal", "message": "XID 79 detected on PCI:0000:3B:00"}, {"time": "2025-03-02T07:57:00Z", "name": "error_xid", "type": "Fatal", "message": "XID 48 detected on PCI:0000:3B:00"}]}
{"component": "accelerator-nvidia-nvlink", "time": "2025-03-02T08:00:00Z", "states": [{"name": "nvlink", "health": "Healthy", "reason": "all links up"}]}
{"component": "accelerator-nvidia-temperature", "states": [{"time": "2025-03-02T08:01:00Z", "name": "temperature", "health": "Degraded", "reason": "above slowdown"}]}
{"component": "accelerator-nvidia-remapped-rows", "time": "2025-03-02T08:00:00Z", "states": [{"name": "remapped_rows", "health": "Unhealthy", "reason": "row remapping failed", "suggested_actions": {"repair_actions": ["REBOOT_SYSTEM"]}}]}
{"component": "memory", "states": []}
{"component": "disk", "states": [{"name": "disk", "health": "Unhealthy", "reason": "read-only"}]}
{"component": "kubelet", "states": "running"}
{"component": "os", "time": "2025-03-02T08:00:00Z", "states": [{"name": "os", "health": "Unhealthy", "reason": "x", "suggested_actions": {"repair_actions": ["IGNORE_NO_ACTION_REQUIRED"]}}]}
"""


def test_gpud_states_and_events(tmp_path):
    result, counts = parse_file(node_health.parse, _write(tmp_path, "gpu-node-09.jsonl", GPUD), "node_health")
    ev = result.tables["node_events"]
    assert counts.row_lines == 6 and counts.rejects == 2 and counts.skipped == 1  # an empty states list: nothing
    assert set(ev["host"]) == {"gpu-node-09"} and set(ev["reporter"]) == {"gpud"}  # gpud names no node
    assert ev.select("kind", "code", "severity", "device").rows() == [
        ("xid", "48", "critical", "0000:3b:00"), ("xid", "79", "critical", "0000:3b:00"),
        ("xid", "48", "critical", "0000:3b:00"),
        ("health_ok", "accelerator-nvidia-nvlink", "ok", None),
        ("thermal", "accelerator-nvidia-temperature", "warning", None),
        ("gpu_memory", "accelerator-nvidia-remapped-rows", "critical", None),
        ("os_kernel", "os", "info", None)]
    assert ev["event_time"][0] == datetime(2025, 3, 2, 8) and ev["event_time"][1] == datetime(2025, 3, 2, 7, 58)
    assert "repair_actions HARDWARE_INSPECTION" in ev["message"][0] and ev["message"][0].startswith("XID 48")
    reasons = dict(zip(result.rejects["line_no"], result.rejects["reason"]))
    assert reasons == {7: "gpud state or event without a readable time (and none on the line)",
                       8: "gpud 'states' or 'events' that is not a list"}


def test_gpud_documented_answers(tmp_path):
    """tests/fixtures/node_health/gpud_tutorials.jsonl: gpud's own documented /v1/events and /v1/states elements
    (its SOURCES.md). The real messages write 'XID 74(NVLINK Error)' without a space; a documented state has
    "time": null, so it is placed by the collector's stamp on the line (line 3) or is a reject (line 2)."""
    path = shutil.copy(FIXTURES / "gpud_tutorials.jsonl", tmp_path / "gpu-node-04.jsonl")
    result, counts = parse_file(node_health.parse, Path(path), "node_health")
    ev = result.tables["node_events"]
    assert counts.lines == 3 and counts.rejects == 1
    assert ev.select("event_time", "kind", "code", "severity", "device").rows() == [
        (datetime(2025, 6, 1, 16, 59, 14), "xid", "74", "critical", "0000:04:00"),
        (datetime(2025, 6, 1, 16, 59, 4), "xid", "79", "critical", "0000:04:00"),
        (datetime(2025, 6, 1, 17, 14, 30), "xid", "74", "critical", "0000:04:00")]
    assert set(ev["host"]) == {"gpu-node-04"} and "repair_actions REBOOT_SYSTEM" in ev["message"][2]
    assert result.rejects.select("line_no", "reason").rows() == [
        (2, "gpud state or event without a readable time (and none on the line)")]


# Events as resmoio/kubernetes-event-exporter writes them (core/v1 Event inline + clusterName + involvedObject; its
# pkg/kube/event.go), written here with node-problem-detector's reasons (config/kernel-monitor.json) and NVSentinel's
# FabricManagerNotActive (ADR-050): no exported line was found to copy (tests/fixtures/node_health/SOURCES.md)
def _k8s_event(reason, kind="Node", name="gpu-node-11", etype="Warning", component="kernel-monitor",
               last="2025-04-01T09:00:00Z", **extra):
    return json.dumps({"metadata": {"name": f"{name}.1830a", "namespace": "default"}, "reason": reason,
                       "message": f"{reason} seen", "source": {"component": component, "host": name},
                       "firstTimestamp": "2025-04-01T08:00:00Z", "lastTimestamp": last, "count": 3, "type": etype,
                       "involvedObject": {"kind": kind, "name": name}, "clusterName": "prod", **extra})


def test_kubernetes_events_about_nodes(tmp_path):
    text = "\n".join([
        _k8s_event("KernelOops"), _k8s_event("TaskHung"), _k8s_event("OOMKilling"),
        _k8s_event("FilesystemIsReadOnly"), _k8s_event("FabricManagerNotActive", component="custom-plugin-monitor"),
        _k8s_event("KernelHasNoDeadlock", etype="Normal"),
        _k8s_event("BackOff", kind="Pod", name="train-0"),  # a pod's: the kubernetes/ source reads it
        _k8s_event("TaskHung", last=None, firstTimestamp=None)]) + "\n"
    result, counts = parse_file(node_health.parse, _write(tmp_path, "events-2025-04-01.jsonl", text), "node_health")
    ev = result.tables["node_events"]
    assert counts.row_lines == 6 and counts.skipped == 1 and counts.rejects == 1
    assert ev.select("kind", "code", "severity").rows() == [
        ("os_kernel", "KernelOops", "warning"), ("os_kernel", "TaskHung", "warning"), ("oom", "OOMKilling", "warning"),
        ("filesystem", "FilesystemIsReadOnly", "warning"), ("services", "FabricManagerNotActive", "warning"),
        ("health_ok", "KernelHasNoDeadlock", "info")]
    assert set(ev["host"]) == {"gpu-node-11"} and ev["event_time"][0] == datetime(2025, 4, 1, 9)  # lastTimestamp
    assert ev["reporter"][4] == "custom-plugin-monitor"
    assert ev["message"][0] == "KernelOops seen [reason KernelOops; Warning; from kernel-monitor; count 3]"
    assert result.rejects["reason"].to_list() == ["Kubernetes Event without a time (lastTimestamp, eventTime, "
                                                  "firstTimestamp)"]


def test_one_file_mixing_every_shape(tmp_path):
    """tests/fixtures/node_health/mixed_shapes.jsonl (the fuzz test's seed too): NVSentinel flat and as
    CloudEvents, gpud states and events, Kubernetes Events, in one file."""
    path = shutil.copy(FIXTURES / "mixed_shapes.jsonl", tmp_path / "gpu-node-07.jsonl")
    result, counts = parse_file(node_health.parse, Path(path), "node_health")
    ev = result.tables["node_events"]
    assert counts.rejects == 0 and counts.skipped == 1 and counts.row_lines == counts.lines - 1  # the pod's Event
    assert ev.group_by("reporter").len().sort("reporter").rows() == [
        ("gpu-health-monitor", 3), ("gpud", 6), ("kernel-monitor", 2), ("system-services-monitor", 3)]
    assert ev.filter(pl.col("kind") == "xid")["code"].to_list() == ["48", "79", "48", "79", "48"]


def test_host_from_the_file_name(tmp_path):
    text = ('{"checkName": "GpuMemWatch", "componentClass": "GPU", "isFatal": true, '
            '"generatedTimestamp": "2025-01-15T10:00:00Z"}\n')
    result, _ = parse_file(node_health.parse, _write(tmp_path, "gpu042.jsonl", text), "node_health")
    assert result.tables["node_events"].select("host", "kind").row(0) == ("gpu042", "gpu_memory")


def test_declared_like_every_source():
    src = SOURCES["node_health"]
    assert src.events == "node_health" and src.tables == ("node_events",) and src.names_hosts


def test_classified_like_the_kernel_xid_and_recoveries_never_blamed(tmp_path):
    """An NVSentinel XID 79 gets the cause, severity and rule of a dmesg XID 79; its checks map onto causes."""
    con = warehouse.connect(tmp_path / "w.duckdb")
    t0 = datetime(2025, 1, 15, 10)
    ev = lambda host, source, kind, code, severity, line: {  # noqa: E731
        "event_time": t0, "host": host, "source": source, "kind": kind, "code": code, "severity": severity,
        "message": "m", "device": None, "reporter": host, "file": "f", "line_no": line}
    rows = [ev("a", "kernel", "xid", "79", "err", 1), ev("b", "node_health", "xid", "79", "critical", 2),
            ev("c", "node_health", "xid", "13", "warning", 3), ev("d", "node_health", "nvlink", "FabricStateUnhealthy",
                                                                  "critical", 4),
            ev("e", "node_health", "services", "GpuServiceDown", "warning", 5),
            ev("f", "node_health", "health_ok", "XidError", "ok", 6),
            ev("g", "node_health", "gpu", "GpuPcieWatch", "info", 7),
            ev("h", "node_health", "thermal", "accelerator-nvidia-temperature", "warning", 8),
            ev("i", "node_health", "gpu_memory", "accelerator-nvidia-remapped-rows", "critical", 9),
            ev("j", "node_health", "oom", "OOMKilling", "warning", 10)]
    _events(con, rows)
    attribution.classify_events(con, load())
    got = {h: (c, s, r) for h, c, s, r in con.execute(
        "SELECT host, cause, severity, rule FROM classified_events").fetchall()}
    con.close()
    assert got["a"] == got["b"] == ("gpu_unavailable", "critical", "xid-79")
    assert got["c"][2] == "xid-13"  # the XID table, not a node_health rule
    assert got["d"] == ("nvlink", "critical", "nh-nvlink")
    assert got["e"] == ("system_services", "warning", "nh-services-warning")
    assert got["h"] == ("cooling_thermal", "warning", "nh-thermal-warning")
    assert got["i"] == ("gpu_memory", "critical", "nh-gpu-memory")
    assert got["j"] == ("oom", "warning", "nh-oom")
    assert "f" not in got and "g" not in got  # a recovery, and an event asking no action: recorded, not blamed


SACCT = ("JobID|JobIDRaw|JobName|User|Account|Partition|QOS|Priority|State|ExitCode|Reason|Submit|Eligible|"
         "Start|End|Elapsed|NNodes|AllocTRES|NodeList|Restarts|SubmitLine\n"
         "100|100|train|alice|llm|gpu|high|1000|NODE_FAIL|1:0|None|2025-01-15T08:00:00|2025-01-15T08:00:00|"
         "2025-01-15T08:00:00|2025-01-15T10:30:40|02:30:40|2|billing=128,cpu=128,gres/gpu=16,mem=1000G,node=2|"
         "gpu-node-[41-42]|0|sbatch train.sh\n"
         "101|101|eval|bob|llm|gpu|high|1000|COMPLETED|0:0|None|2025-01-15T08:00:00|2025-01-15T08:00:00|"
         "2025-01-15T08:00:00|2025-01-15T12:00:00|04:00:00|1|billing=64,cpu=64,gres/gpu=8,mem=500G,node=1|"
         "gpu-node-43|0|sbatch eval.sh\n")


def test_goodput_run_blames_a_failed_job_on_an_nvsentinel_xid(tmp_path):
    src, db, out = tmp_path / "src", tmp_path / "w.duckdb", tmp_path / "out"
    (src / "slurm").mkdir(parents=True)
    (src / "slurm" / "sacct.txt").write_text(SACCT)
    (src / "node_health").mkdir()
    shutil.copy(FIXTURES / "nvsentinel_cloudevents.jsonl", src / "node_health" / "cloudevents.jsonl")
    args = ["run", "--source", str(src), "--db", str(db), "--out", str(out), "-q"]
    result = CliRunner().invoke(main, args)
    assert result.exit_code == EXIT_OK, result.output
    con = duckdb.connect(str(db), read_only=True)
    primary = con.execute(
        "SELECT job_id, cause, host, rule, source FROM failure_attribution WHERE is_primary").fetchall()
    events = con.execute("SELECT count(*) FROM node_events WHERE source = 'node_health'").fetchall()[0][0]
    con.close()
    assert ("100", "gpu_unavailable", "gpu-node-42", "xid-79", "node_health") in primary, primary
    assert events == 3
    why = CliRunner().invoke(main, ["why", "--db", str(db), "100"])
    assert "primary cause: gpu_unavailable (hardware) on gpu-node-42, rule xid-79" in why.output, why.output
    assert "action RESTART_VM" in why.output
    again = CliRunner().invoke(main, args)  # the same files again: nothing added
    assert again.exit_code == EXIT_OK, again.output
    con = duckdb.connect(str(db), read_only=True)
    assert con.execute("SELECT count(*) FROM node_events WHERE source = 'node_health'").fetchall()[0][0] == 3
    con.close()


def test_syslog_xid_check_names_are_xids_and_sxid_ones_are_not(tmp_path):
    """NVSentinel's syslog health monitor names its checks SysLogsXIDError (GPU XIDs) and SysLogsSXIDError
    (NVSwitch SXIDs): the words count, not the letters ('logsxid' holds 'sxid')."""
    base = {"agent": "syslog-health-monitor", "componentClass": "GPU", "isFatal": True, "isHealthy": False,
            "message": "x", "generatedTimestamp": "2025-01-15T10:30:00Z", "nodeName": "n1", "recommendedAction": 24}
    lines = [{**base, "checkName": "SysLogsXIDError", "errorCode": ["79"]},
             {**base, "checkName": "SysLogsSXIDError", "errorCode": ["20034"], "componentClass": "NVSWITCH"}]
    path = _write(tmp_path, "nvsentinel.jsonl", "\n".join(json.dumps(x) for x in lines) + "\n")
    result, counts = parse_file(node_health.parse, path, "node_health")
    assert result.tables["node_events"].select("kind", "code").rows() == [("xid", "79"), ("sxid", "20034")]
    assert counts.rejects == 0


def test_an_event_about_no_known_part_is_not_blamed_on_the_gpu(tmp_path):
    """node-problem-detector's CorruptDockerOverlay2 (its kernel-monitor reason, no area of ours): recorded, never
    blamed on a GPU; a fatal NVSentinel event about a part no area names is infrastructure, part unknown."""
    con = warehouse.connect(tmp_path / "w.duckdb")
    t = datetime(2025, 4, 1, 9)
    _events(con, [(t, "gpu-node-11", "node_health", "other", "CorruptDockerOverlay2", "warning", "m", None,
                   "kernel-monitor", "f", 1),
                  (t, "gpu-node-12", "node_health", "other", "BmcWatch", "critical", "m", None, "bmc", "f", 2),
                  (t, "gpu-node-13", "node_health", "gpu", "GpuSomethingWatch", "warning", "m", None, "g", "f", 3)])
    attribution.classify_events(con, load())
    got = dict(con.execute("SELECT host, cause || '/' || rule FROM classified_events").fetchall())
    con.close()
    assert got == {"gpu-node-12": "unattributed/nh-other-fatal", "gpu-node-13": "gpu_hardware/nh-gpu-warning"}


def test_nvsentinel_sxid_and_fallen_off_checks_read_as_the_kernel_reads_their_lines(tmp_path):
    """SysLogsSXIDError, shaped as NVSentinel's platform-connector test builds it (errorCode ["12028"]; NVSWITCH,
    PCI, NVLINK and GPU entities; componentClass GPU), is an 'sxid' row of that number, classified by the kernel's
    nvswitch-sxid rule; SysLogsGPUFallenOff is XID 79, as kernel.py reads the 'has fallen off the bus' line."""
    base = {"nodeName": "gpu-node-21", "generatedTimestamp": "2025-01-15T10:30:00Z", "agent": "syslog-health-monitor",
            "componentClass": "GPU", "isFatal": True, "isHealthy": False, "recommendedAction": "RESTART_BM"}
    lines = [{**base, "checkName": "SysLogsSXIDError", "message": "SXid 12028 detected", "errorCode": ["12028"],
              "entitiesImpacted": [{"entityType": "NVSWITCH", "entityValue": "0"},
                                   {"entityType": "PCI", "entityValue": "0000:c4:00.0"},
                                   {"entityType": "NVLINK", "entityValue": "30"},
                                   {"entityType": "GPU", "entityValue": "3"}]},
             {**base, "checkName": "SysLogsGPUFallenOff", "message": "GPU has fallen off the bus", "errorCode": [],
              "entitiesImpacted": [{"entityType": "PCI", "entityValue": "0000:ba:00.0"}]},
             {**base, "checkName": "SysLogsSXIDError", "isHealthy": True, "isFatal": False, "message": "ok",
              "errorCode": []}]
    path = _write(tmp_path, "nvsentinel.jsonl", "".join(json.dumps(x) + "\n" for x in lines))
    result, _ = parse_file(node_health.parse, path, "node_health")
    ev = result.tables["node_events"]
    assert ev.select("kind", "code", "device").rows() == [
        ("sxid", "12028", "0000:c4:00"), ("xid", "79", "0000:ba:00"), ("health_ok", "SysLogsSXIDError", None)]
    con = warehouse.connect(tmp_path / "w.duckdb")
    con.register("ev", ev.with_columns(file=pl.lit("f")))
    con.execute("INSERT INTO node_events BY NAME SELECT * FROM ev")
    attribution.classify_events(con, load())
    got = con.execute("SELECT kind, cause, rule FROM classified_events ORDER BY line_no").fetchall()
    con.close()
    assert got == [("sxid", "nvlink", "nvswitch-sxid"), ("xid", "gpu_unavailable", "xid-79")]
