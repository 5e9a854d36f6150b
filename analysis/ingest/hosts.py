"""Host names: Slurm hostlist expressions and hosts named by file paths."""
from __future__ import annotations

import re
from functools import lru_cache
from pathlib import PurePath

_ITEM = re.compile(r"(?:[^,\[\]]|\[[^\]]*\])+")
_GROUP = re.compile(r"\[([^\]]*)\]")
# Files under kernel/ etc. are named after the host: gpu001.log, gpu001.dmesg.gz,
# kern.log-gpu001 is not supported; a folder per host (kernel/gpu001/dmesg.log) is.
_GENERIC = {"dmesg", "kern", "kernel", "syslog", "messages", "journal", "log", "switch", "health", "nhc",
            "dcgm", "perfquery", "ibqueryerrors",
            # the collectors of node_health/ (one file for many nodes): gpud.jsonl, nvsentinel.jsonl, events.jsonl
            "node_health", "nvsentinel", "healthevents", "health_events", "cloudevents", "gpud", "npd", "events"}
# A date in a file's name marks a daily (or hourly) file a collector writes for many hosts (health-2024-03-01.jsonl,
# dcgm_20240301.csv, perfquery-2024-03-05T06:00.txt, logrotate's messages-20240301): its name is no host. A per-host
# daily file names its host by its folder (kernel/gpu001/2024-03-01.log).
_DATED = re.compile(r"(?:^|[-_])(?:19|20)\d\d[-_]?(?:0[1-9]|1[0-2])[-_]?(?:0[1-9]|[12]\d|3[01])(?:$|\D)")


# A real node list names at most a cluster's nodes (Meta's RSC-1: 2,000); a
# hostlist that expands to more is a typo or hostile input, and expanding
# gpu[0-9999][0-9999] would need 10^8 names. Configurable per call.
MAX_HOSTS = 100_000


class HostlistError(ValueError):
    pass


def _expand_group(spec: str, max_hosts: int) -> list[str]:
    out: list[str] = []
    for part in spec.split(","):
        part = part.strip()
        if "-" in part:
            lo, hi = part.split("-", 1)
            if not (lo.isdigit() and hi.isdigit()) or int(hi) < int(lo):
                raise HostlistError(f"bad range '{part}'")
            if int(hi) - int(lo) >= max_hosts:
                raise HostlistError(f"range '{part}' names more than {max_hosts:,} hosts (max_hostlist_hosts)")
            width = len(lo) if lo.startswith("0") else 0  # zero padding is kept
            out.extend(str(i).zfill(width) for i in range(int(lo), int(hi) + 1))
        elif part:
            out.append(part)
    return out


@lru_cache(maxsize=65536)
def expand_hostlist(expr: str | None, max_hosts: int = MAX_HOSTS) -> tuple[str, ...]:
    """'gpu[001-003,010],login1' -> ('gpu001','gpu002','gpu003','gpu010','login1').
    Several bracket groups in one name expand as a cartesian product."""
    if expr is None:
        return ()
    expr = expr.strip()
    if expr in ("", "None assigned", "(null)", "None"):
        return ()
    hosts: list[str] = []
    for item in _ITEM.findall(expr):
        pieces = _GROUP.split(item)  # literal, group, literal, group, ...
        names = [""]
        for i, piece in enumerate(pieces):
            options = _expand_group(piece, max_hosts) if i % 2 else [piece]
            # check the product before building it: the cap holds memory, not just the result
            if len(names) * len(options) + len(hosts) > max_hosts:
                raise HostlistError(f"'{expr[:80]}' names more than {max_hosts:,} hosts (max_hostlist_hosts)")
            names = [n + o for n in names for o in options]
        hosts.extend(n for n in names if n)
    if "[" in "".join(_ITEM.sub("", expr)) or "]" in "".join(_ITEM.sub("", expr)):
        raise HostlistError(f"unbalanced brackets in '{expr}'")
    return tuple(hosts)


# Benchmark files are named after the benchmark (nccl_allreduce.log), not the host, and a folder
# under benchmarks/ is a validation run (benchmarks/<run>/, sql/criteria/samples.sql), not a host:
# a result names its hosts itself (SuperBench's node key, nccl-tests' '#  Rank N ... on <host>' lines).
_NO_PATH_HOST = {"benchmarks"}


def benchmark_run(relpath: PurePath) -> str:
    """The validation run a benchmarks/ file belongs to, as sql/schema/warehouse.sql's benchmark_run_files() names
    it: the folder it sits in, or the file itself when it sits directly in benchmarks/."""
    parts = relpath.parts
    return parts[-2] if len(parts) >= 3 else parts[-1]


def host_from_path(relpath: PurePath) -> str | None:
    """The host a per-host log belongs to: its folder below the source folder
    (kernel/gpu001/dmesg.log), else the file name up to the first dot, unless that is a generic name
    (syslog, health) or holds a date (a daily file of many hosts: health-2024-03-01.jsonl)."""
    parts = relpath.parts
    if parts[0] in _NO_PATH_HOST:
        return None
    if len(parts) >= 3:
        return parts[1]
    stem = parts[-1].split(".")[0]
    return None if stem.lower() in _GENERIC or not stem or _DATED.search(stem) else stem


_NUMBERED = re.compile(r"^(.*?)(\d+)([^\d]*)$")


def compress_hostlist(hosts) -> str:
    """The inverse of expand_hostlist, as Slurm writes it: ('gpu0003', 'gpu0017',
    'gpu0018') -> 'gpu[0003,0017-0018]'. Names group by prefix, suffix and
    digit width (gpu9 and gpu10 are not one range when padded differently);
    names without a number stay as they are. Sorted, duplicates dropped."""
    groups: dict[tuple[str, str, int], list[int]] = {}
    plain: list[str] = []
    for host in sorted(set(hosts)):
        m = _NUMBERED.match(host)
        if m is None or "[" in host or "," in host:
            plain.append(host)
            continue
        prefix, digits, suffix = m.groups()
        width = len(digits) if digits.startswith("0") and len(digits) > 1 else 0
        groups.setdefault((prefix, suffix, width), []).append(int(digits))
    parts = list(plain)
    for (prefix, suffix, width), numbers in sorted(groups.items()):
        numbers = sorted(set(numbers))
        spans, start = [], numbers[0]
        for prev, cur in zip(numbers, numbers[1:] + [None]):
            if cur != prev + 1 if cur is not None else True:
                a, b = str(start).zfill(width), str(prev).zfill(width)
                spans.append(a if start == prev else f"{a}-{b}")
                start = cur
        if len(numbers) == 1:
            parts.append(f"{prefix}{spans[0]}{suffix}")
        else:
            parts.append(f"{prefix}[{','.join(spans)}]{suffix}")
    return ",".join(sorted(parts))
