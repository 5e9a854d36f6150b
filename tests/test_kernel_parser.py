from __future__ import annotations

import os
from datetime import datetime, timezone

import polars as pl
import pytest

from analysis.ingest.contract import IngestOptions, ParseContext, UnrecognisedFormat
from analysis.ingest.parsers.kernel import parse
from conftest import parse_file

GPUD = "gpud-dmesg-fixtures"
RAW = ("kmsg.1.raw-devkmsg.log", "kmsg.2.peermem.raw-devkmsg.log", "pstore-dmesg-erst.txt", "pstore-7530486857247-dmesg.txt")
T = datetime


def run(tmp_path, text: str, name: str = "gpu001.log", **opts):
    path = tmp_path / name
    path.write_text(text)
    result, counts = parse_file(parse, path, "kernel", IngestOptions(**opts))
    return result, counts, result.tables["node_events"]


def one(tmp_path, line: str, **opts) -> dict:
    _, _, df = run(tmp_path, line + "\n", **opts)
    assert df.height == 1, df
    return df.row(0, named=True)


# --- real captures -----------------------------------------------------------

def test_every_dataset_file_accounts_for_its_lines(datasets):
    files = sorted(p for p in (datasets / GPUD).iterdir() if p.suffix in (".log", ".txt") and p.stem.islower())
    files += [datasets / "loghub-hpc" / n / f"{n}_2k.log" for n in ("Linux", "Thunderbird", "BGL", "HPC")]
    for path in files:
        result, counts = parse_file(parse, path, "kernel", IngestOptions(syslog_year=2005))
        df = result.tables["node_events"]
        assert df.columns == ["event_time", "host", "source", "kind", "code", "severity", "message", "device",
                              "reporter", "line_no"]
        assert df.schema["event_time"] == pl.Datetime("us")
        if path.name in RAW:  # seconds since boot and no boot time
            assert counts.rows == 0 and counts.rejects > 0
            assert result.rejects["reason"].str.contains("no boot time for host").all()
        else:
            assert counts.rejects == 0 and counts.rows > 0, path.name
            assert df["event_time"].null_count() == 0


def test_xid_119_dmesg_T(datasets):
    result, counts = parse_file(parse, datasets / GPUD / "xid-dmesg-with-xid-119.ctime.log", "kernel")
    df = result.tables["node_events"]
    assert result.format == "dmesg-T" and counts.rows == 43
    xid = df.filter(pl.col("kind") == "xid")
    assert xid.height == 5
    assert set(xid["code"]) == {"119"} and set(xid["device"]) == {"0000:9b:00"}
    assert xid["event_time"][0] == T(2025, 2, 23, 16, 24, 18)
    assert xid["event_time"][-1] == T(2025, 2, 23, 16, 30, 13)
    assert xid["host"][0] == "xid-dmesg-with-xid-119"  # the file name is all the host there is
    gpu_at = df.filter(pl.col("line_no") == 1).row(0, named=True)
    assert gpu_at["kind"] == "nvrm" and gpu_at["device"] == "0000:9b:00"


def test_xid_13_decode_iso(datasets):
    result, _ = parse_file(parse, datasets / GPUD / "memory-dmesg-xid13.decode-iso.log", "kernel")
    df = result.tables["node_events"]
    xid = df.filter(pl.col("kind") == "xid")
    assert xid.filter(pl.col("code") == "13").height == 16
    x43 = xid.filter(pl.col("code") == "43").row(0, named=True)
    assert x43["event_time"] == T(2025, 1, 21, 4, 41, 44, 287197) and x43["device"] == "0000:38:00"
    assert xid["event_time"][0] == T(2025, 1, 21, 4, 41, 44, 283302)
    assert set(df["severity"]) == {"warning"}
    assert df.filter(pl.col("kind") == "oom").height == 7
    assert xid["message"][0].startswith("NVRM: Xid (PCI:0000:38:00): 13, pid='<unknown>'")


def test_segfault_fixture(datasets):
    result, _ = parse_file(parse, datasets / GPUD / "nccl-dmesg-segfault.decode-iso.log", "kernel")
    df = result.tables["node_events"]
    assert df["kind"].to_list() == ["segfault"] * 2 and df["code"][0] == "libnccl.so.2"


def test_kmsg_with_boot_time_sidecar_and_option(datasets, tmp_path):
    src = datasets / GPUD / "kmsg.1.raw-devkmsg.log"
    path = tmp_path / "gpu007.log"
    path.write_bytes(src.read_bytes())
    (tmp_path / "gpu007.log.boottime").write_text("2025-03-01T00:00:00+01:00\n")
    result, counts = parse_file(parse, path, "kernel")
    df = result.tables["node_events"]
    assert counts.rows == 47 and counts.rejects == 0
    first = df.row(0, named=True)
    assert first["event_time"] == T(2025, 2, 28, 23, 3, 26, 764307)  # 206.764307 s after 23:00 UTC
    assert (first["host"], first["severity"], first["message"]) == ("gpu007", "info", "nvidia-nvswitch2: open (major=510)")
    opts = IngestOptions(boot_times={"kmsg": T(2025, 1, 1)})
    result, _ = parse_file(parse, datasets / GPUD / "kmsg.2.peermem.raw-devkmsg.log", "kernel", opts)
    assert result.tables["node_events"]["event_time"][0] == T(2025, 1, 1, 0, 3, 47, 996636)


def test_kmsg_rejected_without_boot_time(datasets):
    result, counts = parse_file(parse, datasets / GPUD / "kmsg.1.raw-devkmsg.log", "kernel", host_hint="gpu001")
    assert counts.rejects == 47
    assert result.rejects["reason"][0] == ("raw dmesg timestamp (seconds since boot) and no boot time for host gpu001: "
                                           "pass --boot-time or write kmsg.1.raw-devkmsg.log.boottime")


def test_pstore_separators_skipped_and_levels(datasets):
    opts = IngestOptions(boot_times={"pstore-7530486857247-dmesg": T(2025, 1, 1)})
    result, counts = parse_file(parse, datasets / GPUD / "pstore-7530486857247-dmesg.txt", "kernel", opts)
    assert counts.skipped == 4 and counts.rows == 411
    df = result.tables["node_events"]
    mod = df.filter(pl.col("kind") == "ib_link").row(0, named=True)
    assert (mod["code"], mod["device"], mod["severity"]) == ("module_unplugged", "0000:41:00.1", "info")
    assert mod["event_time"] == T(2025, 1, 1, 0, 0, 2, 962781)
    assert df.filter(pl.col("message").str.starts_with("MCE: In-kernel"))["kind"].to_list() == ["other"]


def test_fabric_manager_continuations(datasets):
    result, counts = parse_file(parse, datasets / GPUD / "fabricmanager.log", "kernel")
    df = result.tables["node_events"]
    assert (counts.rows, counts.merged, counts.skipped) == (54, 23, 24)
    first = df.row(0, named=True)
    assert first["event_time"] == T(2025, 2, 25, 13, 59, 45)
    assert first["message"].startswith("Received an inband message:")
    assert "\nMessage payload details:Team release request" in first["message"]
    assert df.filter(pl.col("severity") == "err")["line_no"].to_list() == [100]


def test_loghub_thunderbird_bgl_hpc_linux(datasets):
    hpc = datasets / "loghub-hpc"
    tb = parse_file(parse, hpc / "Thunderbird" / "Thunderbird_2k.log", "kernel")[0].tables["node_events"].row(0, named=True)
    assert (tb["host"], tb["event_time"], tb["severity"]) == ("dn228", T(2005, 11, 9, 20, 1, 1), None)
    assert tb["message"] == "crond(pam_unix)[2915]: session closed for user root"
    bgl = parse_file(parse, hpc / "BGL" / "BGL_2k.log", "kernel")[0].tables["node_events"]
    fatal = bgl.filter(pl.col("line_no") == 9).row(0, named=True)
    assert (fatal["severity"], fatal["code"], fatal["host"]) == ("crit", "APPREAD", "R04-M1-N4-I:J18-U11")
    assert fatal["event_time"] == T(2005, 6, 4, 7, 24, 32, 432192)
    assert bgl.filter(pl.col("severity") == "crit").height == 347
    lanl = parse_file(parse, hpc / "HPC" / "HPC_2k.log", "kernel")[0].tables["node_events"].row(0, named=True)
    assert (lanl["host"], lanl["event_time"]) == ("node-246", T(2004, 2, 26, 14, 12, 22))
    assert lanl["code"] == "unix.hw:state_change.unavailable" and 'Component "SCSI-WWID' in lanl["message"]
    linux = parse_file(parse, hpc / "Linux" / "Linux_2k.log", "kernel", IngestOptions(syslog_year=2005))[0]
    last = linux.tables["node_events"].row(-1, named=True)
    assert (last["host"], last["event_time"]) == ("combo", T(2005, 7, 27, 14, 42))
    assert last["message"] == "Linux agpgart interface v0.100 (c) Dave Jones"


# --- formats -----------------------------------------------------------------

def test_journal_short_iso_variants(tmp_path):
    text = ("-- Logs begin at Mon 2024-01-15 00:00:00 UTC, end at Mon 2024-01-15 11:00:00 UTC. --\n"
            "2024-01-15T10:23:45+0000 gpu001 kernel: NVRM: Xid (PCI:0000:b3:00): 79, pid=1234, name=python, GPU has fallen off the bus.\n"
            "2024-01-15T10:23:46+01:00 gpu002.cluster.local kernel: [ 123.456] hello\n"
            "2024-01-15T10:23:47.123456+0000 gpu003 sshd[99]: Accepted key\n"
            "    indented second line of the sshd message\n")
    result, counts, df = run(tmp_path, text)
    assert (counts.skipped, counts.merged, counts.rows) == (1, 1, 3)
    assert df["host"].to_list() == ["gpu001", "gpu002", "gpu003"]
    assert df["event_time"].to_list() == [T(2024, 1, 15, 10, 23, 45), T(2024, 1, 15, 9, 23, 46),
                                          T(2024, 1, 15, 10, 23, 47, 123456)]
    assert df.row(0, named=True)["kind"] == "xid" and df["code"][0] == "79" and df["device"][0] == "0000:b3:00"
    assert df["message"][1] == "hello"
    assert df["message"][2] == "sshd[99]: Accepted key\nindented second line of the sshd message"
    assert df["reporter"].to_list() == df["host"].to_list() and set(df["source"]) == {"kernel"}


def test_rfc3164_year_rollover_and_pri(tmp_path):
    text = ("<11>Dec 31 23:59:59 gpu001 kernel: [12345.678901] first\n"
            "Jan  1 00:00:01 gpu001 kernel: second\n")
    _, _, df = run(tmp_path, text, syslog_year=2024)
    assert df["event_time"].to_list() == [T(2024, 12, 31, 23, 59, 59), T(2025, 1, 1, 0, 0, 1)]
    assert df["severity"].to_list() == ["err", None] and df["message"].to_list() == ["first", "second"]
    path = tmp_path / "gpu001.log"  # without syslog_year: the last line is dated by the mtime
    stamp = datetime(2025, 1, 5, tzinfo=timezone.utc).timestamp()
    os.utime(path, (stamp, stamp))
    df = parse_file(parse, path, "kernel")[0].tables["node_events"]
    assert df["event_time"].to_list() == [T(2024, 12, 31, 23, 59, 59), T(2025, 1, 1, 0, 0, 1)]


def test_rfc5424(tmp_path):
    row = one(tmp_path, '<14>1 2024-01-15T10:23:45.123Z gpu001.example.org kernel - - [meta x="a]b"] '
                        "mlx5_core 0000:41:00.0: Port module event[error]: module 0, Cable error")
    assert (row["event_time"], row["host"], row["severity"]) == (T(2024, 1, 15, 10, 23, 45, 123000), "gpu001", "info")
    assert (row["kind"], row["code"], row["device"]) == ("ib_link", "module_error", "0000:41:00.0")


def test_dmesg_T_local_time_zone(tmp_path):
    text = "[Mon Jan 15 10:00:00 2024] a\n[Sat Jul  6 10:00:00 2024] b\n[Sat Jul 6 10:00:01 2024] c\n"
    _, _, df = run(tmp_path, text, tz="America/New_York")
    assert df["event_time"].to_list() == [T(2024, 1, 15, 15), T(2024, 7, 6, 14), T(2024, 7, 6, 14, 0, 1)]
    assert df["severity"].to_list() == [None] * 3


def test_dmesg_iso_without_decode_and_offset(tmp_path):
    row = one(tmp_path, "2025-01-21T04:41:44,283302-05:00 nfs: server fs01 not responding, still trying")
    assert row["event_time"] == T(2025, 1, 21, 9, 41, 44, 283302) and row["severity"] is None
    assert (row["kind"], row["code"], row["device"]) == ("filesystem", "nfs", "fs01")


def test_raw_dmesg_continuations_and_orphans(tmp_path):
    text = ("[  100.500000] BUG: something\n"
            "   continued, indented\n"
            "not indented: orphan\n"
            "   indented after an orphan\n"
            "\n")
    (tmp_path / "gpu001.log.boottime").write_text("2024-01-01T00:00:00Z")
    result, counts, df = run(tmp_path, text)
    assert (counts.rows, counts.merged, counts.rejects, counts.skipped) == (1, 1, 2, 1)
    assert df["event_time"][0] == T(2024, 1, 1, 0, 1, 40, 500000)
    assert df["message"][0] == "BUG: something\ncontinued, indented"
    assert result.rejects["reason"].to_list() == ["no recognised timestamp header"] * 2


def test_continuation_of_rejected_record(tmp_path):
    result, counts, df = run(tmp_path, "[  1.0] first\n SUBSYSTEM=pci\n")
    assert counts.rejects == 2 and result.rejects["reason"][1] == "continuation of rejected line 1"


def test_invalid_date_rejected(tmp_path):
    result, counts, _ = run(tmp_path, "[Mon Feb 30 10:00:00 2024] x\n[Mon Feb 26 10:00:00 2024] y\n")
    assert counts.rows == 1 and result.rejects["reason"][0].startswith("invalid timestamp")


def test_unrecognised_file(tmp_path):
    path = tmp_path / "gpu001.log"
    path.write_text("hello\nworld\n")
    lines = pl.DataFrame({"line_no": [1, 2], "text": ["hello", "world"]})
    with pytest.raises(UnrecognisedFormat):
        parse(lines, ParseContext(path=path, source="kernel", host_hint="gpu001"))


def test_mixed_formats_in_one_file(tmp_path):
    text = ("[Mon Jan 15 10:00:00 2024] a\n"
            "kern  :err   : 2024-01-15T10:00:01,000001+00:00 b\n"
            "2024-01-15T10:00:02+00:00 gpu009 kernel: c\n")
    result, _, df = run(tmp_path, text)
    assert df["message"].to_list() == ["a", "b", "c"] and df["host"].to_list() == ["gpu001", "gpu001", "gpu009"]
    assert df["severity"].to_list() == [None, "err", None]
    assert set(result.format.split("+")) == {"dmesg-T", "dmesg-iso", "journal-short-iso"}


# --- event classification -----------------------------------------------------

@pytest.mark.parametrize("msg,kind,code,device", [
    ("NVRM: Xid (0000:03:00): 14, Channel 00000001", "xid", "14", "0000:03:00"),
    ("NVRM: Xid (PCI:0000:b3:00): 79, pid='<unknown>', name=<unknown>, GPU has fallen off the bus.", "xid", "79", "0000:b3:00"),
    ("NVRM: GPU 0000:29:00.0: GPU has fallen off the bus.", "xid", "79", "0000:29:00"),  # same GPU key as Xid lines
    ("NVRM: Xid (PCI:B3:00): 48, pid=1, name=x, DBE", "xid", "48", "0000:b3:00"),
    ("NVRM: GPU at PCI:0000:9b:00: GPU-509665ad-b600-ac93-3616-d754b23d636d", "nvrm", None, "0000:9b:00"),
    ("NVRM: Timeout after 6s of waiting for RPC response from GPU4 GSP! Expected function 76", "gsp", "rpc_timeout", "GPU4"),
    ("pcieport 0000:00:01.0: AER: Corrected error received: 0000:01:00.0", "pcie_aer", "corrected", "0000:01:00.0"),
    ("pcieport 0000:00:03.0: AER: Uncorrected (Non-Fatal) error received: 0000:03:00.0", "pcie_aer",
     "uncorrected_nonfatal", "0000:03:00.0"),
    ("pcieport 0000:80:01.0: AER: Uncorrected (Fatal) error received: 0000:81:00.0", "pcie_aer", "uncorrected_fatal",
     "0000:81:00.0"),
    ("nvidia 0000:03:00.0: PCIe Bus Error: severity=Corrected, type=Physical Layer, (Receiver ID)", "pcie_aer",
     "corrected", "0000:03:00.0"),
    ("EDAC MC0: 1 CE memory read error on CPU_SrcID#0_Ha#0_Chan#0_DIMM#0 (channel:0 slot:0 page:0x1)", "mem_ecc", "CE",
     "CPU_SrcID#0_Ha#0_Chan#0_DIMM#0"),
    ("EDAC MC1: 1 UE memory read error on CPU_SrcID#1_MC#0_Chan#1_DIMM#0 (channel:1 slot:0)", "mem_ecc", "UE",
     "CPU_SrcID#1_MC#0_Chan#1_DIMM#0"),
    ("mce: [Hardware Error]: CPU 3: Machine Check: 0 Bank 5: be00000000800400", "mce", "hardware_error", "cpu3"),
    ("mce: 2 Machine check events logged", "mce", "events_logged", None),
    ("mlx5_core 0000:41:00.0 enp65s0f0np0: Link down", "ib_link", "down", "0000:41:00.0"),
    ("ib0: lost carrier, link down", "ib_link", "down", "ib0"),
    ("mlx5_ib: mlx5_ib_event:3031:(pid 0): port 1 state changed to DOWN", "ib_link", "down", None),
    ("nfs: server storage01 not responding, still trying", "filesystem", "nfs", "storage01"),
    ("LustreError: 11-0: scratch-OST0004-osc: operation ost_connect failed", "filesystem", "lustre", "scratch-OST0004"),
    ("Lustre: scratch-MDT0000-mdc: Connection to scratch-MDT0000 (at 10.0.0.1@o2ib) was lost", "filesystem", "lustre",
     "scratch-MDT0000"),
    ("VFS: Unable to mount root fs on unknown-block(0,0)", "filesystem", "mount", None),
    ("CIFS VFS: cifs_mount failed w/return code = -13", "filesystem", "cifs", None),
    ("Out of memory: Killed process 1234 (python) total-vm:1kB", "oom", "killed", None),
    ("python invoked oom-killer: gfp_mask=0x100cca(GFP_HIGHUSER_MOVABLE), order=0", "oom", "invoked", None),
    ("python[123]: segfault at 0 ip 00007f sp 00007f error 4 in libc.so.6[7f00+1000]", "segfault", "libc.so.6", None),
    ("NVRM: GPU4 GSP RPC buffer contains function 103", "nvrm", None, None),
    ("usb 1-2: new high-speed USB device", "other", None, None),
    ('audit: type=1400 msg="a|b" comm="x|y" | pipe', "other", None, None),
])
def test_classification(tmp_path, msg, kind, code, device):
    row = one(tmp_path, f"[Mon Jan 15 10:00:00 2024] {msg}")
    assert (row["kind"], row["code"], row["device"]) == (kind, code, device)
    assert row["message"] == msg
