"""Write simulated logs to disk a day at a time, in the formats the real tools print.

Lines arrive roughly in time order but may be dated a few hours back (a decoy
before a job's end); a day's buffer is sorted and flushed only once the
simulation clock is past it by more than that, so memory holds about a day.
"""
from __future__ import annotations

import json
from collections import defaultdict
from datetime import datetime, timedelta
from pathlib import Path

SACCT_COLUMNS = ("JobID|JobIDRaw|JobName|User|Account|Partition|QOS|Priority|State|ExitCode|Reason|Submit|"
                 "Eligible|Start|End|Elapsed|NNodes|AllocTRES|NodeList|Restarts|SubmitLine")


def sacct_header(cluster: str | None) -> str:
    """The dump's header: ``sacct --format=Cluster,...`` on a named cluster (a fleet's), else the usual fields."""
    return f"Cluster|{SACCT_COLUMNS}" if cluster else SACCT_COLUMNS


LOOKBACK_S = 8 * 3600  # how far back a line may be dated when it is emitted


class DailyLog:
    """Lines of one kind (kernel, switch, health, sacct) written to one file per day."""

    def __init__(self, folder: Path, name: str, start: datetime, header: str | None = None):
        self.folder, self.name, self.start, self.header = folder, name, start, header
        self.days: dict[int, list[tuple[float, str]]] = defaultdict(list)
        self.files: dict[int, Path] = {}
        folder.mkdir(parents=True, exist_ok=True)

    def add(self, t: float, text: str) -> None:
        self.days[int(t // 86400)].append((t, text))

    def flush(self, now: float | None = None) -> None:
        for day in sorted(self.days):
            if now is not None and (day + 1) * 86400 + LOOKBACK_S > now:
                break
            lines = sorted(self.days.pop(day), key=lambda x: x[0])
            date = (self.start + timedelta(days=day)).strftime("%Y-%m-%d")
            path = self.folder / self.name.format(date=date)
            with path.open("a") as out:
                if self.header and not path.stat().st_size:
                    out.write(self.header + "\n")
                out.write("".join(text + "\n" for _, text in lines))
            self.files[day] = path


def iso(start: datetime, t: float, micro: bool = False) -> str:
    stamp = start + timedelta(seconds=t)
    if stamp.tzinfo is None and stamp.year >= 1000:  # then isoformat prints what strftime did, in half the time
        return stamp.isoformat(timespec="microseconds" if micro else "seconds")
    return stamp.strftime("%Y-%m-%dT%H:%M:%S.%f" if micro else "%Y-%m-%dT%H:%M:%S")


def journal_line(start: datetime, t: float, host: str, msg: str) -> str:
    """journalctl -k -o short-iso, as collected by a central log server."""
    return f"{iso(start, t)}+0000 {host} kernel: {msg}"


def switch_line(start: datetime, t: float, switch: str, port: str, state: str) -> str:
    """Cumulus Linux switchd carrier change, RFC 3339 stamp as rsyslog forwards it."""
    return (f"{iso(start, t, micro=True)}+00:00 {switch} switchd[2213]: nic.c:223 nic_set_carrier: "
            f"{port}: setting kernel carrier: {state}")


def health_line(start: datetime, t: float, host: str, check: str, severity: str, message: str) -> str:
    return json.dumps({"time": iso(start, t) + "Z", "host": host, "check": check,
                       "severity": severity, "message": message})


def health_parts(start: datetime, t: float, check: str, severity: str, message: str) -> tuple[str, str]:
    """``health_line(start, t, host, ...) == before + json.dumps(host) + after``: a sweep's lines for many hosts."""
    before = f'{{"time": {json.dumps(iso(start, t) + "Z")}, "host": '
    after = f', "check": {json.dumps(check)}, "severity": {json.dumps(severity)}, "message": {json.dumps(message)}}}'
    return before, after


def elapsed(seconds: float) -> str:
    s = int(round(seconds))
    d, rest = divmod(s, 86400)
    h, rest = divmod(rest, 3600)
    m, s = divmod(rest, 60)
    return f"{d}-{h:02d}:{m:02d}:{s:02d}" if d else f"{h:02d}:{m:02d}:{s:02d}"


def hostlist(hosts: list[str]) -> str:
    """Compress gpuNNNN names into a Slurm hostlist expression (gpu[0001-0004,0010])."""
    if len(hosts) == 1:
        return hosts[0]
    nums = sorted(int(h[3:]) for h in hosts)
    ranges, lo, prev = [], nums[0], nums[0]
    for n in nums[1:] + [None]:
        if n is not None and n == prev + 1:
            prev = n
            continue
        ranges.append(f"{lo:04d}" if lo == prev else f"{lo:04d}-{prev:04d}")
        if n is not None:
            lo = prev = n
    return "gpu[" + ",".join(ranges) + "]"
