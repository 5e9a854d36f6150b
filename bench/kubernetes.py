"""One simulated history read as a Slurm cluster and as a Kubernetes one: `goodput run` wall, CPU and peak RSS on
each, and the kubernetes/ folder's ingest with the jobs built from it, alone.

    python bench/kubernetes.py [--nodes 2000] [--days 14] [--seed 1] [--workdir /tmp/goodput-k8s-bench]

Each world is simulated once into WORKDIR/<scheduler>-src (kept: a second call reuses it) and run in a process of
its own (`goodput run -q`), so its CPU and peak RSS are its own (resource.getrusage of the children)."""
from __future__ import annotations

import argparse
import resource
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
GOODPUT = [sys.executable, "-m", "pipelines.cli"]
INGEST_ALONE = """
import sys, time
from analysis import warehouse
from analysis.derive.jobs import build_jobs
from analysis.ingest.engine import ingest_directory
con = warehouse.connect(sys.argv[2])
con.execute("SET enable_progress_bar = false")  # its bars would be the output
t, c = time.time(), time.process_time()
ingest_directory(con, sys.argv[1])
print(f"ingest {time.time() - t:.1f} {time.process_time() - c:.1f}")
t, c = time.time(), time.process_time()
build_jobs(con)
print(f"jobs {time.time() - t:.1f} {time.process_time() - c:.1f}")
print("objects", con.sql("SELECT count(*) FROM k8s_objects").fetchall()[0][0],
      "instances", con.sql("SELECT count(*) FROM jobs").fetchall()[0][0])
"""


def timed(cmd: list[str], **kw) -> tuple[subprocess.CompletedProcess, float, float, float]:
    """The command, its wall seconds, CPU seconds (user + sys) and peak RSS (GB) as a child of this process."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t = time.time()
    done = subprocess.run(cmd, capture_output=True, text=True, cwd=ROOT, **kw)
    wall = time.time() - t
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return done, wall, cpu, after.ru_maxrss / 1e6  # the largest child so far: worlds run largest last


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--nodes", type=int, default=2000)
    ap.add_argument("--days", type=int, default=14)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--workdir", type=Path, default=Path("/tmp/goodput-k8s-bench"))
    a = ap.parse_args()
    a.workdir.mkdir(parents=True, exist_ok=True)
    for world in ("slurm", "kubernetes"):
        src = a.workdir / f"{world}-src"
        if not src.exists():
            done, wall, cpu, _ = timed([*GOODPUT, "simulate", "--preset", "rsc1", "--nodes", str(a.nodes), "--days",
                                        str(a.days), "--seed", str(a.seed), "--scheduler", world, "--out", str(src)])
            assert done.returncode == 0, done.stderr
            print(f"{world}: simulated {a.nodes} x {a.days} in {wall:.1f} s wall, {cpu:.1f} CPU s", flush=True)
        size = sum(p.stat().st_size for p in src.rglob("*") if p.is_file()) / 1e6
        for stale in a.workdir.glob(f"{world}.*duckdb*"):
            subprocess.run(["rm", "-rf", str(stale)], check=True)
        done, wall, cpu, rss = timed([*GOODPUT, "run", "--source", str(src), "--db", str(a.workdir / f"{world}.duckdb"),
                                      "--out", str(a.workdir / f"{world}-out"), "-q"])
        status = "ok" if done.returncode == 0 else f"exit {done.returncode}"
        print(f"{world}: goodput run {status}: {wall:.1f} s wall, {cpu:.1f} CPU s, peak RSS {rss:.2f} GB "
              f"(source {size:,.0f} MB)", flush=True)
    alone = a.workdir / "k8s-only"
    subprocess.run(["rm", "-rf", str(alone)], check=True)
    (alone / "src").mkdir(parents=True)
    subprocess.run(["cp", "-al", str(a.workdir / "kubernetes-src" / "kubernetes"), str(alone / "src")], check=True)
    done, wall, cpu, _ = timed([sys.executable, "-c", INGEST_ALONE, str(alone / "src"), str(alone / "w.duckdb")])
    assert done.returncode == 0, done.stderr
    size = sum(p.stat().st_size for p in (alone / "src").rglob("*") if p.is_file()) / 1e6
    said = " / ".join(line for line in done.stdout.splitlines() if line.split(" ")[0] in ("ingest", "jobs", "objects"))
    print(f"kubernetes/ alone ({size:,.0f} MB): {said} (seconds wall, CPU); whole process {wall:.1f} s wall, "
          f"{cpu:.1f} CPU s")


if __name__ == "__main__":
    main()
