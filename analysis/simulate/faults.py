"""Failure causes: how often each happens, what it does to a job and a node,
and the log lines it leaves (as NVIDIA's driver, the kernel and the switch
print them)."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from analysis.simulate.cluster import GPU_BUS
from analysis.simulate.draws import Categorical


@dataclass(frozen=True)
class Cause:
    id: str  # taxonomy id (docs/methods.md#failure-taxonomy-and-attribution)
    weight: float  # share of hardware faults
    node_fail: float  # chance the node stops answering (job ends NODE_FAIL)
    drain: float  # chance a health check catches it and drains the node
    check: str | None  # the health check that catches it
    repair_h: tuple[float, float]  # repair time range when drained
    component: str  # ticket component
    hardware: bool = True  # counts towards the hardware failure rate


CAUSES = [
    Cause("gpu_memory", 0.20, 0.0, 0.9, "gpu_ecc", (4, 72), "GPU"),
    Cause("gpu_unavailable", 0.17, 0.8, 1.0, "gpu_count", (8, 96), "GPU"),
    Cause("pcie", 0.05, 0.4, 0.8, "pcie_link", (4, 48), "PCIe riser"),
    Cause("nvlink", 0.08, 0.0, 0.9, "nvlink_status", (4, 48), "NVSwitch baseboard"),
    Cause("gpu_driver_firmware", 0.07, 0.2, 0.8, "gpu_count", (1, 6), "GPU firmware"),
    Cause("infiniband_link", 0.15, 0.0, 0.6, "check_hw_ib", (1, 24), "optics"),
    Cause("filesystem_mount", 0.10, 0.0, 0.7, "check_fs_mount", (0.5, 4), "filesystem"),
    Cause("host_memory", 0.08, 1.0, 1.0, "dimm_health", (6, 72), "DIMM"),
    Cause("nccl_timeout", 0.10, 0.0, 0.0, None, (0, 0), "network", hardware=False),
]
BY_ID = {c.id: c for c in CAUSES}
WEIGHTS = np.array([c.weight for c in CAUSES]) / sum(c.weight for c in CAUSES)
_BY_WEIGHT = Categorical(WEIGHTS)
_MIXES: dict[tuple[tuple[str, float], ...], Categorical] = {}
XID_CODES = (48, 63, 64, 94, 95)
_XID = Categorical([0.35, 0.2, 0.1, 0.15, 0.2])


def pick_cause(rng: np.random.Generator, lemon_cause: str | None, mix: tuple[tuple[str, float], ...] = ()) -> Cause:
    """A fault's cause: mostly a lemon's own; else by the shares in CAUSES, or in ``mix`` (cause id, weight)
    when the configuration sets one (a fabric-heavy cluster, say)."""
    if lemon_cause and rng.random() < 0.7:
        return BY_ID[lemon_cause]
    if mix:
        if mix not in _MIXES:
            w = np.array([dict(mix).get(c.id, 0.0) for c in CAUSES])
            _MIXES[mix] = Categorical(w / w.sum())
        return CAUSES[_MIXES[mix].index(rng)]
    return CAUSES[_BY_WEIGHT.index(rng)]


def _gpu(rng) -> tuple[int, str]:
    g = int(rng.integers(0, 8))
    return g, f"0000:{GPU_BUS[g]}:00"


def kernel_lines(cause: str, rng: np.random.Generator, pid: int) -> list[tuple[float, str]]:
    """(seconds relative to the fault, kernel message) for a fault."""
    g, pci = _gpu(rng)
    xid = f"NVRM: Xid (PCI:{pci}): "
    if cause == "gpu_memory":
        code = XID_CODES[_XID.index(rng)]
        text = {48: "An uncorrectable double bit error (DBE) has been detected on GPU in the framebuffer at partition 2, subpartition 0.",
                63: "Row Remapper: New row (0x00000000000c1f2e) marked for remapping, reset gpu to activate.",
                64: "Row Remapper Error: failed to remap row, retirement table full.",
                94: "Contained: SM (0x1). RST: No, D-RST: No",
                95: "Uncontained: FBHUB. RST: Yes, D-RST: No"}[code]
        who = f"pid={pid}, name=python" if code in (48, 94, 95) else "pid='<unknown>', name=<unknown>"
        lines = [(0.0, f"{xid}{code}, {who}, {text}")]
        if code == 48:
            lines.append((0.4, f"{xid}63, pid='<unknown>', name=<unknown>, Row Remapper: New row (0x00000000000c1f2e) marked for remapping, reset gpu to activate."))
        return lines
    if cause == "gpu_unavailable":
        lines = []
        if rng.random() < 0.6:  # PCIe errors usually precede the GPU dropping off the bus
            lines += [(-2.1, f"pcieport 0000:{GPU_BUS[g][0]}0:01.0: AER: Uncorrected (Fatal) error received: {pci}.0"),
                      (-2.0, f"nvidia {pci}.0: PCIe Bus Error: severity=Uncorrected (Fatal), type=Transaction Layer, (Requester ID)")]
        return lines + [(0.0, f"NVRM: GPU {pci}.0: GPU has fallen off the bus."),
                        (0.0, f"{xid}79, pid={pid}, name=python, GPU has fallen off the bus."),
                        (1.0, "NVRM: A GPU crash dump has been created. If possible, please run")]
    if cause == "pcie":
        return [(float(i) * 0.7, f"pcieport 0000:{GPU_BUS[g][0]}0:01.0: AER: Uncorrected (Non-Fatal) error received: {pci}.0")
                for i in range(3)] + [(2.5, f"nvidia {pci}.0: PCIe Bus Error: severity=Uncorrected (Non-Fatal), type=Transaction Layer, (Requester ID)")]
    if cause == "nvlink":
        return [(0.0, f"{xid}74, pid={pid}, name=python, NVLink: fatal error detected on link {int(rng.integers(0, 18))}(0x0, 0x0, 0x10000, 0x0, 0x0, 0x0, 0x0)")]
    if cause == "gpu_driver_firmware":
        if rng.random() < 0.6:
            return [(0.0, f"{xid}119, pid={pid}, name=python, Timeout after 6s of waiting for RPC response from GPU{g} GSP! Expected function 76 (GSP_RM_CONTROL) (0x20800a4c 0x4)."),
                    (0.1, f"NVRM: GPU{g} GSP RPC buffer contains function 76 (GSP_RM_CONTROL) and data 0x0000000020800a4c 0x0000000000000004.")]
        return [(0.0, f"{xid}120, pid={pid}, name=python, GSP task timeout @ pc:0x8d3a5f0, partition:0")]
    if cause == "infiniband_link":
        return [(-0.5, "mlx5_core 0000:4b:00.0: Port module event[error]: module 0, Cable error, Bad or shorted cable/module"),
                (0.0, "mlx5_core 0000:4b:00.0 ibp75s0: Link down")]
    if cause == "filesystem_mount":
        if rng.random() < 0.5:
            return [(0.0, "nfs: server storage01 not responding, still trying")]
        return [(0.0, "LustreError: 11-0: scratch-OST0004-osc-ffff9a2c4e5f8000: operation ost_connect to node 10.1.0.4@o2ib failed: rc = -16"),
                (0.2, "Lustre: scratch-OST0004-osc-ffff9a2c4e5f8000: Connection to scratch-OST0004 (at 10.1.0.4@o2ib) was lost; in progress operations using this service will wait for recovery to complete")]
    if cause == "host_memory":
        dimm = f"CPU_SrcID#{int(rng.integers(0, 2))}_Ha#0_Chan#{int(rng.integers(0, 8))}_DIMM#0"
        return [(-1.0, "mce: [Hardware Error]: Machine check events logged"),
                (0.0, f"EDAC MC0: 1 UE memory read error on {dimm} (channel:{int(rng.integers(0, 8))} slot:0 page:0x{int(rng.integers(1, 1 << 24)):x} offset:0x0 grain:32)")]
    return []  # nccl_timeout: the application times out with nothing in the kernel log


def switch_flap(rng: np.random.Generator) -> list[tuple[float, str]]:
    """(seconds relative to the fault, 'down'|'up') carrier transitions of a flapping link."""
    out, t = [], -1.0
    for _ in range(int(rng.integers(1, 4))):
        out.append((t, "down"))
        t += float(rng.uniform(1, 20))
        out.append((t, "up"))
        t += float(rng.uniform(5, 60))
    return out


# Benign kernel lines every node writes (and an application fault, XID 13, that is the user's doing).
NOISE = np.array([
    "nvidia-nvswitch0: open (major=510)",
    "audit: type=1400 audit(1709251200.123:42): apparmor=\"DENIED\" operation=\"open\" profile=\"snap.lxd\" name=\"/proc/1/environ\"",
    "mlx5_core 0000:4b:00.0: 63.008 Gb/s available PCIe bandwidth (8.0 GT/s PCIe x8 link)",
    "EDAC MC0: 1 CE memory read error on CPU_SrcID#0_Ha#0_Chan#3_DIMM#0 (channel:3 slot:0 page:0x3a2b1 offset:0x0 grain:32)",
    "perf: interrupt took too long (2504 > 2500), lowering kernel.perf_event_max_sample_rate to 79750",
    "NFSD: Using /var/lib/nfs/v4recovery as the NFSv4 state recovery directory",
    "IPv6: ADDRCONF(NETDEV_CHANGE): ibp75s0: link becomes ready",
])
USER_FAULT = [
    "NVRM: Xid (PCI:{pci}): 13, pid={pid}, name=python, Graphics SM Warp Exception on (GPC 4, TPC 1, SM 0): Out Of Range Address",
    "python[{pid}]: segfault at 7f797fe00000 ip 00007f7c7ac69996 sp 00007f7c12fd7c30 error 4 in libtorch_cuda.so[7f7c7ac00000+d3d3000]",
]
# Decoys: alarming events that did not end the job they sit near.
DECOY = [
    ("xid", "63", "NVRM: Xid (PCI:{pci}): 63, pid='<unknown>', name=<unknown>, Row Remapper: New row (0x0000000000031a4e) marked for remapping, reset gpu to activate."),
    ("xid", "94", "NVRM: Xid (PCI:{pci}): 94, pid={pid}, name=python, Contained: SM (0x1). RST: No, D-RST: No"),
    ("pcie_aer", "uncorrected_fatal", "pcieport 0000:a0:01.0: AER: Uncorrected (Fatal) error received: {pci}.0"),
    ("xid", "79", "NVRM: Xid (PCI:{pci}): 79, pid={pid}, name=python, GPU has fallen off the bus."),
]
