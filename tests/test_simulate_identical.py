"""The simulator writes the same bytes for the same seed and options: every output file's sha256 against a manifest
committed before the simulator was sped up (issue 35), so a faster simulator is provably the same simulator.

The runs cover the default writers (a small preset), the optional ones (stragglers' step lines and truth, a
fleet's Cluster column, a cause mix, an early health check) and a big-job cluster (preemption, crash loops,
requeues). Only summary.json's wall_s (the run's own time) is left out.

After a deliberate change to what the simulator writes, regenerate the manifests (and say why in the commit):
    .venv/bin/python -m tests.test_simulate_identical
"""
from __future__ import annotations

import hashlib
import json
import sys
import tempfile
from pathlib import Path

import pytest

from analysis.simulate.config import preset
from analysis.simulate.run import simulate

MANIFESTS = Path(__file__).parent / "fixtures" / "simulate_hashes"
RUNS = {
    "small_seed3": lambda: preset("small", seed=3),
    "optional_writers": lambda: preset("small", seed=4, days=6, straggler_jobs=0.3, cluster="c1",
                                       health_check_added_day=2, telemetry_jobs=2, telemetry_slow_jobs=1,
                                       cause_mix=(("infiniband_link", 2.0), ("nccl_timeout", 1.0),
                                                  ("gpu_memory", 1.0))),
    "big_jobs": lambda: preset("rsc1", nodes=128, days=6, seed=5),
}


def digest(root: Path) -> dict[str, str]:
    """sha256 of every file under ``root`` by relative path; summary.json without its wall_s."""
    out = {}
    for p in sorted(root.rglob("*")):
        if not p.is_file():
            continue
        data = p.read_bytes()
        if p.name == "summary.json":
            summary = json.loads(data)
            assert isinstance(summary.pop("wall_s"), float | int)
            data = json.dumps(summary, indent=2).encode()
        out[p.relative_to(root).as_posix()] = hashlib.sha256(data).hexdigest()
    return out


@pytest.mark.parametrize("name", sorted(RUNS))
def test_same_bytes_as_the_manifest(name, tmp_path):
    expected = json.loads((MANIFESTS / f"{name}.json").read_text())
    simulate(RUNS[name](), tmp_path / "out")
    got = digest(tmp_path / "out")
    assert sorted(got) == sorted(expected), "a different set of files"
    changed = [path for path in expected if got[path] != expected[path]]
    assert not changed, f"{len(changed)} of {len(expected)} files differ, e.g. {changed[:5]}"


def regenerate() -> None:
    MANIFESTS.mkdir(parents=True, exist_ok=True)
    for name, cfg in RUNS.items():
        with tempfile.TemporaryDirectory() as tmp:
            simulate(cfg(), Path(tmp) / "out")
            hashes = digest(Path(tmp) / "out")
        (MANIFESTS / f"{name}.json").write_text(json.dumps(hashes, indent=1, sort_keys=True) + "\n")
        print(f"{name}: {len(hashes)} files", file=sys.stderr)


if __name__ == "__main__":
    regenerate()
