"""The machines: hostnames in racks and pods, leaf switches, the cabling map, lemons."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from analysis.simulate.config import SimConfig

LEMON_COMPONENTS = ("gpu", "pcie", "dimm", "nic", "optics", "psu", "bios")
# the failure cause a lemon's defect produces most often
LEMON_CAUSE = {"gpu": "gpu_memory", "pcie": "gpu_unavailable", "dimm": "host_memory", "nic": "infiniband_link",
               "optics": "infiniband_link", "psu": "gpu_unavailable", "bios": "gpu_driver_firmware"}
GPU_BUS = ("18", "2a", "3a", "5d", "9a", "ab", "ba", "db")  # PCI buses of the 8 GPUs (H100 HGX-like)


def ip_of(index: int) -> str:
    """A node's address (topology's host_addresses, the job logs' NCCL lines)."""
    return f"10.1.{index // 250}.{index % 250 + 1}"


@dataclass
class Cluster:
    hosts: list[str]
    rack: np.ndarray  # rack index per node
    leaf: list[str]  # leaf switch per node
    port: list[str]  # switch port per node
    lemon: dict[int, str]  # node index -> defective component

    def topology_rows(self) -> list[tuple[str, str, str, str, str]]:
        return [(self.leaf[i], self.port[i], h, "mlx5_0", ip_of(i)) for i, h in enumerate(self.hosts)]


def build_cluster(cfg: SimConfig, rng: np.random.Generator) -> Cluster:
    n = cfg.nodes
    idx = np.arange(n)
    rack = idx // cfg.nodes_per_rack
    pod = rack // cfg.racks_per_pod
    # gpu-p1-r03-n07 style names sort and compress badly in hostlists; sites
    # number nodes flat and keep rack/pod in the inventory, as here.
    hosts = [f"gpu{i + 1:04d}" for i in idx]
    leaf = [f"leaf-p{p + 1}-r{r + 1:02d}" for p, r in zip(pod, rack)]
    port = [f"swp{i % cfg.nodes_per_rack + 1}" for i in idx]
    n_lemons = max(1, round(cfg.lemon_share * n))
    chosen = rng.choice(n, size=n_lemons, replace=False)
    lemon = {int(i): str(rng.choice(LEMON_COMPONENTS)) for i in chosen}
    return Cluster(hosts, rack, leaf, port, lemon)
