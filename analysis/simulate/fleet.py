"""A fleet of simulated clusters: one source tree per cluster (``DIR/<name>/``, truth/ included) and ``DIR/fleet.json``.

Host names follow the simulator's usual ``gpu0001...`` in every cluster, so clusters share host names on
purpose: goodput must keep each cluster's hosts apart by cluster, not by name. Each Slurm cluster's sacct dumps
carry its name in Slurm's ``Cluster`` column; a Kubernetes cluster's tree is the one `simulate --scheduler kubernetes`
writes (kubernetes/ and node_health/ instead of slurm/, slurm_events/ and the kernel's XIDs), so a fleet can mix them.
"""
from __future__ import annotations

import json
import re
from dataclasses import dataclass, replace
from datetime import datetime
from pathlib import Path
from typing import Callable, NamedTuple

from analysis.fleet.clusters import NAME
from analysis.simulate.config import PRESETS, SimConfig
from analysis.simulate.run import simulate

MIN_NODES, MAX_NODES = 4, 100_000  # as `goodput simulate --nodes`
# A fleet's profiles: the presets, with RSC-2 at the failure rate Meta measured on it (2.34 per 1,000 node-days
# against RSC-1's 6.50, Meta §III; docs/methods.md) so that a fleet comparison has a difference to find. The
# rsc2 preset itself keeps 6: the lemon tests' bars are set on it.
PROFILES = {"rsc1": PRESETS["rsc1"], "rsc2": replace(PRESETS["rsc2"], failure_rate=2.34), "small": PRESETS["small"]}
BY_POSITION = ("rsc1", "rsc2")  # a name that is no profile: first rsc1, second rsc2, then alternating
SCHEDULERS = ("slurm", "kubernetes")  # as `goodput simulate --scheduler`
SYNTAX = "NAME:NODES[:PROFILE][:SCHEDULER]"


class Entry(NamedTuple):
    """One cluster of --fleet as given: PROFILE and SCHEDULER None when left out."""
    name: str
    nodes: int
    profile: str | None = None
    scheduler: str | None = None


@dataclass(frozen=True)
class Member:
    name: str
    profile: str
    profile_from: str  # "given" (NAME:NODES:PROFILE), "name" (the name is a profile) or "position"
    cfg: SimConfig

    @property
    def scheduler(self) -> str:
        return self.cfg.scheduler


def parse_fleet(spec: str) -> list[Entry]:
    """``rsc1:2000,rsc2:1000,lab:48:small,k8s:64:kubernetes`` -> [Entry(name, nodes, profile, scheduler), ...];
    ValueError saying what is wrong."""
    members: list[Entry] = []
    for entry in spec.split(","):
        parts = re.fullmatch(r"([^:]*):(\d{1,9})((?::[a-z0-9]+){0,2})", entry.strip(), re.ASCII)
        if not parts:
            raise ValueError(f"'{entry.strip()}' is not {SYNTAX} (e.g. rsc1:2000,rsc2:1000,lab:48:small,"
                             "k8s:64:rsc1:kubernetes)")
        name, nodes = parts.group(1), int(parts.group(2))
        if not NAME.fullmatch(name):  # the names a fleet run accepts (analysis/fleet/clusters.py)
            raise ValueError(f"cluster name '{name}' must match {NAME.pattern} (it names a folder and a SQL "
                             "identifier)")
        profile, scheduler = _extras(name, parts.group(3).split(":")[1:])
        if not MIN_NODES <= nodes <= MAX_NODES:
            raise ValueError(f"cluster {name}: {nodes} nodes, expected {MIN_NODES} to {MAX_NODES:,}")
        if name in (n for n, *_ in members):
            raise ValueError(f"cluster name '{name}' given twice")
        members.append(Entry(name, nodes, profile, scheduler))
    return members


def _extras(name: str, fields: list[str]) -> tuple[str | None, str | None]:
    """The optional fields after NODES: a profile, a scheduler, or both in that order (the two sets of names do
    not overlap, so either may be left out)."""
    profile = scheduler = None
    for field in fields:
        if field in PROFILES and profile is None and scheduler is None:
            profile = field
        elif field in SCHEDULERS and scheduler is None:
            scheduler = field
        elif field in PROFILES or field in SCHEDULERS:
            raise ValueError(f"cluster {name}: '{':'.join(fields)}' is not [PROFILE][:SCHEDULER] (one profile, then "
                             f"one scheduler: {SYNTAX})")
        else:
            raise ValueError(f"cluster {name}: '{field}' is no profile ({', '.join(PROFILES)}) nor scheduler "
                             f"({', '.join(SCHEDULERS)})")
    return profile, scheduler


def plan(members: list[Entry], days: int | None = None, seed: int | None = None,
         start: datetime | None = None, scheduler: str | None = None) -> list[Member]:
    """Each cluster's settings. One period for all (``days``, else the longest profile's); cluster i's seed is
    ``seed + i``, so the first cluster of a fleet writes what a single run of its profile and seed writes (but
    for the Cluster column). A cluster naming no scheduler takes ``scheduler`` (default slurm); a cluster's
    scheduler changes how its history is written, not what happens (the same seed, the same truth)."""
    seed = 1 if seed is None else seed
    members = [Entry(*m) for m in members]
    profiles = [(m.profile, "given") if m.profile else (m.name, "name") if m.name in PROFILES
                else (BY_POSITION[i % len(BY_POSITION)], "position") for i, m in enumerate(members)]
    days = days or max(PROFILES[p].days for p, _ in profiles)
    out = []
    for i, (m, (profile, how)) in enumerate(zip(members, profiles)):
        name, nodes = m.name, m.nodes
        cfg = replace(PROFILES[profile], nodes=nodes, days=days, seed=seed + i, cluster=name,
                      scheduler=m.scheduler or scheduler or "slurm",
                      **({"start": start} if start is not None else {}))
        out.append(Member(name, profile, how, cfg))
    return out


def manifest(fleet: list[Member]) -> dict:
    """fleet.json: what was simulated, nothing that varies between runs (the same command writes the same bytes).
    A cluster's scheduler only when it is not Slurm, as in truth/summary.json: an all-Slurm fleet's file is the
    one fleets wrote before they could mix schedulers."""
    first = fleet[0].cfg
    return {"start": first.start.strftime("%Y-%m-%d"), "days": first.days,
            "clusters": [{"name": m.name, "nodes": m.cfg.nodes, "profile": m.profile, "profile_from": m.profile_from,
                          "seed": m.cfg.seed, "failure_rate": m.cfg.failure_rate, "lemon_share": m.cfg.lemon_share,
                          **({"scheduler": m.scheduler} if m.scheduler != "slurm" else {})}
                         for m in fleet]}


def simulate_fleet(fleet: list[Member], out: Path, progress: Callable[[str], None] | None = None) -> list[dict]:
    """Simulate each cluster into ``out/<name>/``, one after the other, then write ``out/fleet.json`` (last: a
    fleet without it was cut short). Returns each cluster's summary."""
    out = Path(out)
    if out.exists() and any(out.iterdir()):
        raise FileExistsError(f"{out} is not empty: simulate into a new directory")
    say = progress or (lambda _msg: None)
    summaries = []
    for i, m in enumerate(fleet, 1):
        say(f"cluster {m.name} ({i}/{len(fleet)}): {m.cfg.nodes:,} nodes, profile {m.profile}, seed {m.cfg.seed}, "
            f"{m.scheduler}")
        summaries.append(simulate(m.cfg, out / m.name, progress=lambda msg, name=m.name: say(f"{name}: {msg}")))
    (out / "fleet.json").write_text(json.dumps(manifest(fleet), indent=2) + "\n")
    return summaries
