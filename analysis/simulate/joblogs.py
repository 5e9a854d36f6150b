"""Job logs (``joblogs/slurm-<jobid>.out``) and fabric port counters (``network/``).

What a job's own output shows, in the formats NCCL, PyTorch, Megatron and srun
print: NCCL init lines (rank -> host), timed progress lines, harmless NCCL
WARNs, and at the end what ended it:
  hang    (nccl_timeout, one host): the host's ranks stall in a collective; every
          rank's watchdog times out, the host's ranks one work item behind the rest
  fabric  (nccl_timeout, no host): every rank times out at the same work item
  link    (infiniband_link, one host, silent: no kernel or switch line): the
          host's ring neighbours get completion errors naming its address, it
          names them; its HCA port counts symbol and receive errors
  ecc     (gpu_memory): CUDA reports an uncorrectable ECC error on the host's ranks
  user    a Python traceback on one rank, srun's exit lines
Requeued instances append to the job's file, as Slurm does.
"""
from __future__ import annotations

import csv
import io
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import numpy as np

from analysis.simulate.cluster import GPU_BUS, ip_of

EXCEPTIONS = [
    "KeyError: 'input_ids'", "ValueError: Expected input batch_size (32) to match target batch_size (64).",
    "FileNotFoundError: [Errno 2] No such file or directory: '/datasets/shard-00417.bin'",
    "torch.cuda.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 3 has a total capacity of "
    "79.10 GiB of which 1.06 GiB is free.",
    "RuntimeError: CUDA error: an illegal memory access was encountered",
    "AssertionError: loss is NaN at step 5120",
]
HARMLESS_WARN = [
    "NCCL WARN NET/IB : Got async event : GID table change",
    "NCCL WARN [Service thread] Accept failed Resource temporarily unavailable",
    "NCCL WARN Missing \"iommu=pt\" from kernel command line which can lead to system instablity or hang!",
]


@dataclass
class Case:
    job_id: str
    instance: int
    hosts: list[str]
    per_node: int
    start: float
    end: float
    state: str
    variant: str  # hang | fabric | link | ecc | user | ok | steps (stragglers.py: step lines only)
    culprit: str | None  # the host the truth blames (None: fabric, user, ok)
    steps: Any = None  # stragglers.InstanceSteps: torchtitan's per-rank step lines instead of Megatron's


class JobLogWriter:
    def __init__(self, out: Path, t0: datetime, hosts: list[str], rng: np.random.Generator):
        self.dir, self.t0, self.rng = out / "joblogs", t0, rng
        self.index = {h: i for i, h in enumerate(hosts)}
        self.dir.mkdir(parents=True, exist_ok=True)

    def _dt(self, t: float) -> datetime:
        return self.t0 + timedelta(seconds=t)

    def write(self, case: Case) -> int:
        lines = self._lines(case)
        with (self.dir / f"slurm-{case.job_id}.out").open("a") as f:
            f.write("\n".join(lines) + "\n")
        return len(lines)

    def _lines(self, c: Case) -> list[str]:
        rng = self.rng
        label = rng.random() < 0.5  # srun --label
        n = len(c.hosts) * c.per_node
        pids = {h: int(rng.integers(1000, 4_000_000)) for h in c.hosts}
        host_of = lambda r: c.hosts[r // c.per_node]  # noqa: E731 - Slurm's block distribution
        pre = lambda r: f"{r}: " if label else ""  # noqa: E731
        out = [f"{pre(0)}[{self._dt(c.start):%Y-%m-%d %H:%M:%S},{int(rng.integers(0, 1000)):03d}] [INFO] "
               f"starting training on {len(c.hosts)} nodes, world size {n}"]
        out.append(f"{pre(0)}{host_of(0)}:{pids[host_of(0)]}:{pids[host_of(0)]} [0] NCCL INFO NCCL version 2.18.5+cuda12.2")
        comm = int(rng.integers(1 << 40, 1 << 48))
        for r in range(n if n <= 64 or c.steps is not None else 1):  # step lines need every rank's host
            h, d = host_of(r), r % c.per_node
            out.append(f"{pre(r)}{h}:{pids[h]}:{pids[h] + 37} [{d}] NCCL INFO comm 0x{comm:x} rank {r} nranks {n} "
                       f"cudaDev {d} nvmlDev {d} busId {GPU_BUS[d]}000 commId 0x{comm * 7:x} - Init COMPLETE")
        if len(c.hosts) > 1 and rng.random() < 0.4:
            r = int(rng.integers(0, n))
            out.append(f"{pre(r)}{host_of(r)}:{pids[host_of(r)]}:{pids[host_of(r)] + 41} [{r % c.per_node}] "
                       f"{HARMLESS_WARN[int(rng.integers(0, len(HARMLESS_WARN)))]}")
        timeout_s = float(rng.choice([600, 1800]))
        stall = max(c.start + 1, c.end - timeout_s - 5) if c.variant in ("hang", "fabric") else c.end - 20
        step = 300.0
        first = max(c.start + step, stall - 7200)
        it0 = int((first - c.start) / 1.2)
        if c.steps is not None:
            for _ in np.arange(first, stall, step):
                rng.normal(0, 20)  # the draws Megatron's lines would take: the next logs stay as they were
            out += c.steps.log_lines(pre)
        for k, t in enumerate(np.arange(first, stall, step) if c.steps is None else ()):
            out.append(f"{pre(n - 1)} [{self._dt(t):%Y-%m-%d %H:%M:%S}] iteration {it0 + 250 * k:>8}/  500000 | "
                       f"consumed samples: {(it0 + 250 * k) * 1024:>12} | elapsed time per iteration (ms): "
                       f"{1200 + rng.normal(0, 20):.1f} | lm loss: {2.5 - 0.0001 * k:.6E} |")
        out += getattr(self, f"_{c.variant}")(c, n, host_of, pre, pids, timeout_s)
        return out

    def _glog(self, t: float, pid: int, line: int) -> str:
        dt = self._dt(t)
        return f"[E{dt:%m%d %H:%M:%S}.{dt.microsecond:06d} {pid} ProcessGroupNCCL.cpp:{line}]"

    def _timeouts(self, c, n, host_of, pre, pids, timeout_s, behind: str | None) -> list[str]:
        seq, out = int(self.rng.integers(2000, 90000)), []
        for r in range(n):
            h = host_of(r)
            s = seq - 1 if h == behind else seq
            t = c.end - 5 + r * 0.001
            out.append(f"{pre(r)}[rank{r}]:{self._glog(t, pids[h], 616)} [Rank {r}] Watchdog caught collective operation "
                       f"timeout: WorkNCCL(SeqNum={s}, OpType=ALLREDUCE, NumelIn=4194304, NumelOut=4194304, "
                       f"Timeout(ms)={int(timeout_s * 1000)}) ran for {int(timeout_s * 1000) + 41} milliseconds before timing out.")
            out.append(f"{pre(r)}[rank{r}]:{self._glog(t, pids[h], 1785)} [PG ID 0 PG GUID 0(default_pg) Rank {r}] "
                       f"Exception (either an error or timeout) detected by watchdog at work: {s}, last enqueued NCCL "
                       f"work: {s}, last completed NCCL work: {s - 1}.")
        return out + self._srun(c, n, "Exited with exit code 1" if c.state == "FAILED" else "Killed", pre)

    def _hang(self, c, n, host_of, pre, pids, timeout_s):
        return self._timeouts(c, n, host_of, pre, pids, timeout_s, behind=c.culprit)

    def _fabric(self, c, n, host_of, pre, pids, timeout_s):
        return self._timeouts(c, n, host_of, pre, pids, timeout_s, behind=None)

    def _link(self, c, n, host_of, pre, pids, timeout_s):
        bad = c.culprit
        i = c.hosts.index(bad)
        neighbours = sorted({c.hosts[(i - 1) % len(c.hosts)], c.hosts[(i + 1) % len(c.hosts)]} - {bad})
        out = []
        for reporter, peer in [(nb, bad) for nb in neighbours] + [(bad, nb) for nb in neighbours]:
            r = c.hosts.index(reporter) * c.per_node + int(self.rng.integers(0, c.per_node))
            me, them = ip_of(self.index[reporter]), ip_of(self.index[peer])
            for _ in range(int(self.rng.integers(1, 3))):
                out.append(f"{pre(r)}{reporter}:{pids[reporter]}:{pids[reporter] + 53} [{r % c.per_node}] "
                           f"transport/net_ib.cc:1295 NCCL WARN NET/IB : Got completion from peer {them}<{int(self.rng.integers(30000, 60000))}> "
                           f"with status=12 opcode=0 len=0 vendor err 129 (Recv) localGid ::ffff:{me} remoteGids::ffff:{them}")
                out.append(f"{pre(r)}{reporter}:{pids[reporter]}:{pids[reporter] + 53} [{r % c.per_node}] NCCL INFO transport/net.cc:1298 -> 6")
            out.append(f"{pre(r)}[rank{r}]:{self._glog(c.end - 3, pids[reporter], 1537)} [Rank {r}] NCCL communicator "
                       f"was aborted on rank {r}. Original reason for failure was: NCCL error: remote process exited "
                       f"or there was a network error, NCCL version 2.18.5")
            out.append(f"{pre(r)}torch.distributed.DistBackendError: NCCL error in: ../torch/csrc/distributed/c10d/"
                       f"ProcessGroupNCCL.cpp:1970, remote process exited or there was a network error, NCCL version 2.18.5")
            out.append(f"{pre(r)}ncclRemoteError: A call failed possibly due to a network error or a remote process "
                       f"exiting prematurely.")
        return out + self._srun(c, n, "Exited with exit code 1", pre)

    def _ecc(self, c, n, host_of, pre, pids, timeout_s):
        i = c.hosts.index(c.culprit)
        r = i * c.per_node + int(self.rng.integers(0, c.per_node))
        return [f"{pre(r)}Traceback (most recent call last):", f'{pre(r)}  File "/workspace/train.py", line 301, in <module>',
                f"{pre(r)}    loss.backward()", f"{pre(r)}RuntimeError: CUDA error: uncorrectable ECC error encountered",
                f"{pre(r)}Compile with `TORCH_USE_CUDA_DSA` to enable device-side assertions."] + self._srun(c, n, "Exited with exit code 1", pre)

    def _user(self, c, n, host_of, pre, pids, timeout_s):
        r = int(self.rng.integers(0, n))
        exc = EXCEPTIONS[int(self.rng.integers(0, len(EXCEPTIONS)))]
        return [f"{pre(r)}Traceback (most recent call last):", f'{pre(r)}  File "/workspace/train.py", line 212, in <module>',
                f"{pre(r)}    main()", f'{pre(r)}  File "/workspace/train.py", line 188, in main',
                f"{pre(r)}    batch = next(loader)", f"{pre(r)}{exc}"] + self._srun(c, n, "Exited with exit code 1", pre)

    def _ok(self, c, n, host_of, pre, pids, timeout_s):
        return [f"{pre(0)}[{self._dt(c.end - 1):%Y-%m-%d %H:%M:%S},000] [INFO] training finished"]

    def _steps(self, c, n, host_of, pre, pids, timeout_s):
        """An instance with step lines and nothing else to show (stragglers.py)."""
        return self._ok(c, n, host_of, pre, pids, timeout_s) if c.state == "COMPLETED" else []

    def _srun(self, c, n, what, pre) -> list[str]:
        first = c.hosts[0] if c.culprit is None else c.culprit
        k = c.hosts.index(first) * c.per_node
        tasks = f"task {k}" if c.per_node == 1 else f"tasks {k}-{k + c.per_node - 1}"
        return [f"srun: error: {first}: {tasks}: {what}"]


def write_counters(out: Path, hosts: list[str], days: int, t0: datetime, errors: dict[str, list[float]],
                   rng: np.random.Generator) -> int:
    """node_exporter-style HCA port counters for every host every 6 hours: rare stray symbol errors, a few
    resets (driver reloads), and the silent link faults' error bursts (``errors``: host -> fault times).
    One file per day (``network/ib-port-counters-YYYY-MM-DD.csv``), as a nightly export would write them:
    a one-day increment brings one new file, not a rewritten history."""
    folder = out / "network"
    folder.mkdir(parents=True, exist_ok=True)
    names = ("symbol_error", "port_rcv_errors", "link_downed")
    # every host has a row at the same times: stamps and the quoted metric names formatted once, rows as csv
    # writes them ("\r\n"), a tick's three at once
    ticks = np.arange(0, days * 86400, 6 * 3600.0).tolist()
    stamps = [(t0 + timedelta(seconds=t)).strftime("%Y-%m-%dT%H:%M:%SZ") for t in ticks]
    metrics = [_csv_field(f'node_infiniband_{name}_total{{device="mlx5_0",port="1"}}') for name in names]
    files: dict[int, Any] = {}
    try:
        for day in sorted({int(t // 86400) for t in ticks}):
            path = folder / f"ib-port-counters-{(t0 + timedelta(days=day)):%Y-%m-%d}.csv"
            f = files[day] = path.open("w", newline="")
            csv.writer(f).writerow(["time", "host", "metric", "value"])
        for h in hosts:
            host = _csv_field(h)
            symbol = rcv = downed = 0  # the counters (whole numbers, as the float sums they were)
            bursts = sorted(errors.get(h, []))
            for t, stamp in zip(ticks, stamps):
                if rng.random() < 0.01:
                    symbol = rcv = downed = 0  # driver reload: counters start again from zero
                symbol += int(rng.poisson(0.3))
                while bursts and bursts[0] <= t:
                    bursts.pop(0)
                    symbol += int(rng.integers(200, 900))
                    rcv += int(rng.integers(20, 200))
                files[int(t // 86400)].write(f"{stamp},{host},{metrics[0]},{symbol}\r\n"
                                             f"{stamp},{host},{metrics[1]},{rcv}\r\n"
                                             f"{stamp},{host},{metrics[2]},{downed}\r\n")
    finally:
        for f in files.values():
            f.close()
    return len(hosts) * len(ticks) * len(names)


def _csv_field(text: str) -> str:
    """``text`` as csv.writer prints it in a row (quoted when it must be)."""
    buf = io.StringIO()
    csv.writer(buf, lineterminator="").writerow([text])
    return buf.getvalue()
