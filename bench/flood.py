"""An XID flood on one GPU: is every phase linear in the flood's size, and is the flood one episode?

    python bench/flood.py [--sizes 250000,500000,1000000] [--step-ms 100] [--workdir /tmp/goodput-bench-flood]

For each size N, a source folder with
  kernel/gpu0001.log  N journal short-iso-precise lines from one node, one GPU (PCI 0000:b3:00), every
                      --step-ms (0.1 s: 1 M lines span ~28 h):
                      `<ts>+0000 gpu0001 kernel: NVRM: Xid (PCI:0000:b3:00): 95, pid=<varying>, name=python, ...`
                      plus a handful of unrelated lines (nvswitch open, audit, an EDAC CE), a blank line, an
                      indented continuation line and a line with no header (the parser's folding path);
  slurm/sacct.txt     one job on gpu0001 (allocation + batch + step 0) that FAILED during the flood.
Then, each phase in a child process of its own (so peak RSS is that phase's, imports included; wall and CPU
seconds are the phase's own, without interpreter start-up and imports; --repeat runs of each, the fastest
wall and CPU and the highest peak reported) on one warehouse per N:
  ingest      analysis.ingest.engine.ingest_directory (lines/s; lines == rows + rejects + skipped + merged)
  prep        the derived steps before classified_events (jobs, job_log_events, node_events), not judged
  classify    analysis.derive.attribution.classify_events
  attribute   attribute_failures (between the two in the asset graph; node_incidents does not read it)
  incidents   build_node_incidents (creates the event_episodes view)
  episodes    SELECT * FROM event_episodes (fetched into Python)
and checks the flood is exactly one episode for XID 95 on gpu0001 with events == N, first/last time the
first/last line's. Per-line cost (us per line) is printed so linearity shows: it should not grow with N.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from datetime import datetime, timedelta
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

HOST = "gpu0001"
PCI = "0000:b3:00"
START = datetime(2024, 3, 1, 0, 0, 0)
XID = "NVRM: Xid (PCI:{pci}): 95, pid={pid}, name=python, Uncontained ECC error"
# unrelated lines (index into the flood, message): kind 'other', one EDAC CE (an episode of its own)
NORMAL = [(0, "nvidia-nvswitch0: open (major=510)"),
          (3, "audit: type=1400 audit(1709251200.123:42): apparmor=\"DENIED\" operation=\"open\" profile=\"snap\""),
          (0.5, "mlx5_core 0000:41:00.0: 63.008 Gb/s available PCIe bandwidth (8.0 GT/s PCIe x8 link)"),
          (0.9, "EDAC MC0: 1 CE memory read error on CPU_SrcID#0_Ha#0_Chan#0_DIMM#0 (channel:0 slot:0 page:0x5353)")]


def _stamp(t: datetime) -> str:
    return t.strftime("%Y-%m-%dT%H:%M:%S.%f") + "+0000"


def flood_lines(n: int, start: datetime = START, step_ms: int = 100, host: str = HOST, pci: str = PCI) -> list[str]:
    """``n`` XID 95 lines on one GPU, one every ``step_ms``, pid varying (journalctl -o short-iso-precise)."""
    import numpy as np

    t = np.datetime64(start, "us") + (np.arange(n, dtype=np.int64) * step_ms * 1000).astype("timedelta64[us]")
    stamps = np.datetime_as_string(t, unit="us")
    pids = 40_000 + (np.arange(n) * 7919) % 50_000
    return [f"{s}+0000 {host} kernel: {XID.format(pci=pci, pid=p)}" for s, p in zip(stamps.tolist(), pids.tolist())]


def normal_lines(n: int, start: datetime = START, step_ms: int = 100, host: str = HOST) -> list[tuple[int, str]]:
    """(position in the flood, line) of the unrelated lines: at a fraction of the flood (float) or line index."""
    out = []
    for where, msg in NORMAL:
        i = int(where * n) if isinstance(where, float) else where
        t = start + timedelta(milliseconds=i * step_ms + step_ms // 2)  # between two XID lines
        out.append((i, f"{_stamp(t)} {host} kernel: {msg}"))
    return out


def write_kernel(path: Path, n: int, step_ms: int = 100) -> dict:
    """The flood with the unrelated lines and a blank line mixed in; what the checks need to know."""
    xid = flood_lines(n, step_ms=step_ms)
    extra = dict(normal_lines(n, step_ms=step_ms))
    lines = []
    for i, line in enumerate(xid):
        lines.append(line)
        if i in extra:
            lines.append(extra[i])
        if i == n // 3:
            lines.append("")  # skipped
        if i == n // 2:  # a continuation (merged into the line above) and a line with no header (rejected)
            lines += ["  continued: the rest of the message above", "garbage without a timestamp header"]
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(lines) + "\n")
    return {"lines": len(lines), "xid": n, "first": START.isoformat(),
            "last": (START + timedelta(milliseconds=(n - 1) * step_ms)).isoformat()}


def write_sacct(path: Path, start: datetime, end: datetime, host: str = HOST, job: int = 4242) -> None:
    """One job on ``host``: allocation, batch, extern and step 0, FAILED at ``end``."""
    from analysis.ingest.parsers.sacct import DEFAULT_COLUMNS

    s, e = start.strftime("%Y-%m-%dT%H:%M:%S"), end.strftime("%Y-%m-%dT%H:%M:%S")
    secs = int((end - start).total_seconds())
    elapsed = f"{secs // 86400}-{secs % 86400 // 3600:02d}:{secs % 3600 // 60:02d}:{secs % 60:02d}"
    tres = "billing=8,cpu=64,gres/gpu=8,mem=512G,node=1"
    rows = [f"{job}|{job}|train|alice|llm|gpu|normal|1000|FAILED|1:0|None|{s}|{s}|{s}|{e}|{elapsed}|1|{tres}|{host}|0|"
            "sbatch train.sh",
            f"{job}.batch|{job}.batch|batch||||||FAILED|1:0||{s}|{s}|{s}|{e}|{elapsed}|1|{tres}|{host}||",
            f"{job}.extern|{job}.extern|extern||||||COMPLETED|0:0||{s}|{s}|{s}|{e}|{elapsed}|1|{tres}|{host}||",
            f"{job}.0|{job}.0|python||||||FAILED|1:0||{s}|{s}|{s}|{e}|{elapsed}|1|{tres}|{host}||"]
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("|".join(DEFAULT_COLUMNS) + "\n" + "\n".join(rows) + "\n")


def write_source(src: Path, n: int, step_ms: int = 100) -> dict:
    info = write_kernel(src / "kernel" / f"{HOST}.log", n, step_ms)
    span = timedelta(milliseconds=n * step_ms)
    # the job starts an hour before the flood and fails a third of the way into it
    write_sacct(src / "slurm" / "sacct.txt", START - timedelta(hours=1), START + span / 3)
    return info


# Each phase in a fresh interpreter: its peak RSS is its own. Timed from after the imports and the connect.
CHILD = r"""
import json, resource, sys, time
from pathlib import Path


def peak_mb():
    # VmHWM: this process's own peak (exec starts a new mm). ru_maxrss is not: Linux carries the parent's peak
    # RSS at fork over execve, so a child of a parent that wrote a 1 M-line log reported that as its own.
    try:
        for line in open("/proc/self/status"):
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


from analysis import warehouse
phase, src, db = sys.argv[1], Path(sys.argv[2]), Path(sys.argv[3])
con = warehouse.connect(db)
con.execute("SET enable_progress_bar = false")  # its bar on stdout (a query over 2 s) would garble the JSON line
from analysis.derive import attribution
from analysis.derive.taxonomy import load
taxonomy = load()
base = peak_mb()
out = {}
t0, c0 = time.perf_counter(), time.process_time()
if phase == "ingest":
    from analysis.ingest.engine import ingest_directory
    summary = ingest_directory(con, src)
    out["outcomes"] = [[o.source, o.status, o.lines, o.rows, o.rejects] for o in summary.outcomes]
elif phase == "prep":
    from assets.pure_builds import steps
    for key, build in steps(taxonomy):
        if key == "classified_events":
            break
        build(con)
elif phase == "classify":
    out["count"] = attribution.classify_events(con, taxonomy)
elif phase == "attribute":
    out["count"] = attribution.attribute_failures(con, taxonomy)["rows"]
elif phase == "incidents":
    out["count"] = attribution.build_node_incidents(con)
elif phase == "episodes":
    rows = con.execute("SELECT * FROM event_episodes").fetchall()
    out["count"] = len(rows)
wall, cpu = time.perf_counter() - t0, time.process_time() - c0
if phase == "ingest":
    out["files"] = [list(r) for r in con.execute(
        "SELECT source, lines, row_lines, rows, rejects, skipped, merged, status FROM ingested_files").fetchall()]
    out["rejects_table"] = con.execute("SELECT count(*) FROM rejects").fetchone()[0]
if phase == "episodes":
    ep = con.execute("SELECT host, source, kind, code, device, rule, events, first_time, last_time FROM event_episodes"
                     " ORDER BY host, kind, code, first_time").fetchall()
    out["episodes"] = [[str(v) for v in r] for r in ep]
con.close()
print(json.dumps({**out, "wall": wall, "cpu": cpu, "base_mb": base, "peak_mb": peak_mb()}))
"""

PHASES = ["ingest", "prep", "classify", "attribute", "incidents", "episodes"]
JUDGED = ["ingest", "classify", "incidents", "episodes"]


def child(phase: str, src: Path, db: Path) -> dict:
    run = subprocess.run([sys.executable, "-c", CHILD, phase, str(src), str(db)], cwd=REPO, capture_output=True,
                         text=True, env={**os.environ, "PYTHONPATH": str(REPO)})
    if run.returncode:
        raise SystemExit(f"{phase} failed:\n{run.stderr[-3000:]}")
    return json.loads([line for line in run.stdout.splitlines() if line.startswith("{")][-1])


def check(n: int, info: dict, ingest: dict, episodes: dict) -> list[str]:
    """The accounting and episode checks; the failures, as sentences."""
    bad = []
    for source, lines, row_lines, rows, rejects, skipped, merged, status in ingest["files"]:
        if status != "ok" or lines != rows + rejects + skipped + merged or row_lines != rows:
            bad.append(f"{source}: {lines} lines != {rows} rows + {rejects} rejects + {skipped} skipped"
                       f" + {merged} merged (status {status})")
    kernel = [f for f in ingest["files"] if f[0] == "kernel"]
    if not kernel or kernel[0][1] != info["lines"]:
        bad.append(f"kernel file read {kernel[0][1] if kernel else 0} lines, wrote {info['lines']}")
    xid = [e for e in episodes["episodes"] if e[0] == HOST and e[2] == "xid" and e[3] == "95"]
    first, last = info["first"].replace("T", " "), info["last"].replace("T", " ")
    if len(xid) != 1:
        bad.append(f"{len(xid)} episodes of XID 95 on {HOST}, not 1")
    elif (int(xid[0][6]), xid[0][7], xid[0][8]) != (n, first, last):
        bad.append(f"XID 95 episode: {xid[0][6]} events {xid[0][7]} .. {xid[0][8]}; want {n} {first} .. {last}")
    return bad


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sizes", default="250000,500000,1000000", help="flood sizes, comma separated")
    ap.add_argument("--step-ms", type=int, default=100, help="milliseconds between two XID lines")
    ap.add_argument("--repeat", type=int, default=3, help="runs of each phase: the fastest wall and CPU, the highest peak")
    ap.add_argument("--workdir", type=Path, default=Path("/tmp/goodput-bench-flood"))
    args = ap.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    args.workdir.mkdir(parents=True, exist_ok=True)
    print(f"cores: {os.cpu_count()}, load average {' '.join(f'{x:.2f}' for x in os.getloadavg())}", flush=True)
    table: dict[int, dict[str, dict]] = {}
    failures = []
    for n in sizes:
        src = args.workdir / f"src-{n}"
        marker = args.workdir / f"info-{n}.json"  # not in src: it would be an unrecognised file
        if not marker.exists() or not src.is_dir():
            t0 = time.perf_counter()
            info = write_source(src, n, args.step_ms)
            marker.write_text(json.dumps(info))
            print(f"wrote {info['lines']:,} kernel lines ({(src / 'kernel' / f'{HOST}.log').stat().st_size / 1e6:.0f} MB)"
                  f" to {src} in {time.perf_counter() - t0:.1f} s", flush=True)
        info = json.loads(marker.read_text())
        db = args.workdir / f"flood-{n}.duckdb"
        db.unlink(missing_ok=True)
        table[n] = {}
        for phase in PHASES:
            runs = []
            for _ in range(args.repeat):  # each phase rebuilds what it writes; the ingest into a fresh warehouse
                if phase == "ingest":
                    for f in (db, db.with_name(db.name + ".wal")):
                        f.unlink(missing_ok=True)
                runs.append(child(phase, src, db))
            r = {**runs[-1], "wall": min(x["wall"] for x in runs), "cpu": min(x["cpu"] for x in runs),
                 "peak_mb": max(x["peak_mb"] for x in runs), "base_mb": max(x["base_mb"] for x in runs)}
            table[n][phase] = r
            extra = f"  {r['count']:,} rows" if "count" in r else ""
            print(f"N={n:>9,} {phase:10} {r['wall']:7.2f} s {r['cpu']:7.2f} CPU-s  peak RSS {r['peak_mb']:6,.0f} MB "
                  f"(at start {r['base_mb']:4,.0f})  {r['wall'] / n * 1e6:6.2f} us/line{extra}",
                  flush=True)
        bad = check(n, info, table[n]["ingest"], table[n]["episodes"])
        xid = [e for e in table[n]["episodes"]["episodes"] if e[2] == "xid" and e[3] == "95"]
        print(f"N={n:>9,} check: {'OK' if not bad else 'FAILED'}; XID 95 episodes on {HOST}: "
              f"{[(e[6], e[7], e[8]) for e in xid]}; all episodes: {len(table[n]['episodes']['episodes'])}", flush=True)
        failures += [f"N={n}: {b}" for b in bad]
        for f in (db, db.with_name(db.name + ".wal")):
            f.unlink(missing_ok=True)
    report(table, sizes)
    if failures:
        raise SystemExit("\n".join(failures))


def report(table: dict, sizes: list[int]) -> None:
    print(f"\n{'phase':10} {'N':>10} {'wall s':>8} {'CPU s':>8} {'peak MB':>8} {'wall us/line':>13} "
          f"{'CPU us/line':>12}  notes")
    for phase in PHASES:
        for n in sizes:
            r = table[n][phase]
            note = ""
            if phase == "ingest":
                note = f"{n / r['wall'] / 1e3:,.0f} k lines/s"
            print(f"{phase:10} {n:>10,} {r['wall']:8.2f} {r['cpu']:8.2f} {r['peak_mb']:8,.0f} "
                  f"{r['wall'] / n * 1e6:13.2f} {r['cpu'] / n * 1e6:12.2f}  {note}")
    lo, hi = sizes[0], sizes[-1]
    print(f"\nper-line cost {hi:,} / {lo:,} (CPU; > 1.5 is non-linear):")
    for phase in PHASES:
        a, b = table[lo][phase]["cpu"] / lo, table[hi][phase]["cpu"] / hi
        w = (table[hi][phase]["wall"] / hi) / (table[lo][phase]["wall"] / lo)
        flag = "  <-- NON-LINEAR" if b / a > 1.5 and phase in JUDGED else ""
        print(f"  {phase:10} CPU {b / a:5.2f}x  wall {w:5.2f}x{flag}")


if __name__ == "__main__":
    main()
