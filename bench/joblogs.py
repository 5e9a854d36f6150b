"""Job-log parsing speed: goodput on one very large job stdout against a raw Polars regex scan.

    python bench/joblogs.py [--size-mb 1024] [--workdir /tmp/goodput-bench-joblogs]

Writes one synthetic Slurm job stdout (<workdir>/src/joblogs/slurm-4242.out): 70%
program chatter, 15% NCCL INFO, 10% Megatron progress lines, 4% NCCL WARN and
1% PyTorch watchdog timeouts, half of the lines behind an ``srun --label``
prefix. Then, each in a fresh subprocess (so peak RSS is per measurement):

  (a) scan     Polars scan_csv of the file's lines + str.contains("NCCL|Watchdog|iteration"),
               the floor for reading and regex-filtering that many bytes;
  (b) parse    goodput's read path for job logs: a streaming sha256, then 64 MB chunks of lines
               (LineStream) through joblogs.parse_stream, then account;
  (c) ingest   goodput's full ingest_directory into a fresh DuckDB warehouse.

Seconds exclude interpreter start-up and imports; peak RSS is the child's
ru_maxrss (imports included).
"""
from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import polars as pl

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

CHUNK_LINES = 1_000_000
START = np.datetime64("2024-03-01T10:00:00", "ms")
MS_PER_LINE = 120  # a progress line every ~10 lines: ~1.2 s per iteration

CHATTER = np.array([
    " > building train, validation, and test datasets ...",
    "vm-07-05: Using QLoop: True",
    "Loading checkpoint shard 3/8 took 2.41s",
    "  warmup: 2000 steps, decay: cosine, min lr: 3.0e-05",
    "> setting tensorboard ...",
    "time (ms) | forward-compute: 401.22 | backward-compute: 790.51 | optimizer: 12.03",
    "[default3]:  warnings.warn(\"torch.utils.checkpoint: the use_reentrant parameter should be passed explicitly\")",
    "compiling dataset index builder ...",
    "  > finished creating indexed dataset in 0.014892 seconds",
    "saving checkpoint at step 12000 to /checkpoints/run-7 in torch format, 'async': False",
])
KINDS = np.array(["chatter", "info", "progress", "warn", "watchdog"])
SHARES = np.array([0.70, 0.15, 0.10, 0.04, 0.01])


def _host(col: str) -> pl.Expr:
    return pl.lit("gpu") + pl.col(col).cast(pl.Utf8).str.zfill(4)


def _chunk(rng: np.random.Generator, first: int, n: int, iter0: int) -> tuple[pl.DataFrame, int]:
    """``n`` lines starting at global line ``first``; ``iter0`` progress lines came before."""
    kind = rng.choice(len(KINDS), n, p=SHARES)
    idx = first + np.arange(n)
    t = START + (idx * MS_PER_LINE).astype("timedelta64[ms]")
    frame = pl.DataFrame({
        "i": idx, "kind": kind.astype(np.int8), "t": t,
        "host": rng.integers(1, 129, n, dtype=np.int16), "pid": rng.integers(100_000, 999_999, n),
        "dev": rng.integers(0, 8, n, dtype=np.int8), "rank": rng.integers(0, 1024, n, dtype=np.int16),
        "a": rng.integers(0, 1_000_000, n), "b": rng.integers(0, 1_000_000_000, n),
        "chat": rng.integers(0, len(CHATTER), n, dtype=np.int8),
        "label": np.where(rng.random(n) < 0.5, rng.integers(0, 1024, n), -1),
    })
    progress = kind == 2
    iters = iter0 + np.cumsum(progress)
    frame = frame.with_columns(it=pl.Series(iters))
    nccl_prefix = pl.format("{}:{}:{} [{}] NCCL ", _host("host"), pl.col("pid"), pl.col("pid") + 34, pl.col("dev"))
    peer = (pl.col("rank") + 1) % 1024
    info = nccl_prefix + pl.format("INFO Channel {}/0 : {}[{}] -> {}[{}] via P2P/IPC/read",
                                   (pl.col("a") % 32).cast(pl.Utf8).str.zfill(2), pl.col("rank"), pl.col("dev"),
                                   peer, (pl.col("dev") + 1) % 8)
    warn = nccl_prefix + pl.lit("WARN NET/IB : Got async event : GID table change")
    loss = pl.col("a") % 1_500_000 + 1_500_000  # 1.500000 .. 2.999999
    progress_line = pl.format(
        " [{}] iteration {}/  500000 | consumed samples: {} | elapsed time per iteration (ms): {}.{} |"
        " lm loss: {}.{}E+00 |",
        pl.col("t").dt.strftime("%Y-%m-%d %H:%M:%S"), pl.col("it").cast(pl.Utf8).str.pad_start(8),
        (pl.col("it") * 1024).cast(pl.Utf8).str.pad_start(12), 1150 + pl.col("a") % 100, pl.col("a") % 10,
        loss // 1_000_000, (loss % 1_000_000).cast(pl.Utf8).str.zfill(6))
    watchdog = pl.format(
        "[rank{}]:[E{}.{} ProcessGroupNCCL.cpp:607] [Rank {}] Watchdog caught collective operation timeout: "
        "WorkNCCL(SeqNum={}, OpType=ALLREDUCE, NumelIn=4194304, NumelOut=4194304, Timeout(ms)=600000) "
        "ran for {} milliseconds before timing out.",
        pl.col("rank"), pl.col("t").dt.strftime("%m%d %H:%M:%S"), pl.col("b").cast(pl.Utf8).str.zfill(9),
        pl.col("rank"), pl.col("it") + 7000, 600_000 + pl.col("a") % 1000)
    chatter = pl.Series(CHATTER).gather(frame["chat"].cast(pl.UInt32))
    k = pl.col("kind")
    frame = frame.with_columns(chatter=chatter).select(
        pl.when(k == 0).then(pl.col("chatter")).when(k == 1).then(info).when(k == 2).then(progress_line)
        .when(k == 3).then(warn).otherwise(watchdog).alias("text"), pl.col("label"))
    frame = frame.select(pl.when(pl.col("label") >= 0).then(pl.format("{}: {}", pl.col("label"), pl.col("text")))
                         .otherwise(pl.col("text")).alias("text"))
    return frame, int(iters[-1]) if n else iter0


def write_log(path: Path, size_bytes: int, seed: int = 42) -> tuple[int, float]:
    """Write chunks until ``size_bytes``; returns (lines, seconds)."""
    rng = np.random.default_rng(seed)
    path.parent.mkdir(parents=True, exist_ok=True)
    t0 = time.perf_counter()
    lines = iters = 0
    with open(path, "wb") as f:
        while f.tell() < size_bytes:
            est = max(1000, min(CHUNK_LINES, (size_bytes - f.tell()) // 60 + 1))
            frame, iters = _chunk(rng, lines, est, iters)
            data = frame.write_csv(include_header=False, quote_style="never").encode()
            remaining = size_bytes - f.tell()
            if len(data) > remaining:  # cut the last chunk at a line end just past the target
                cut = data.find(b"\n", remaining - 1)
                data = data[: cut + 1]
            f.write(data)
            lines += data.count(b"\n")
    return lines, time.perf_counter() - t0


# ---- children: one measurement per process ------------------------------------------------

def _peak_mb() -> float:
    """This process's peak RSS. VmHWM, not ru_maxrss: on Linux a child's ru_maxrss
    starts from its forking parent's RSS (the generator's), VmHWM from its own image."""
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def child_scan(path: Path) -> dict:
    t0 = time.perf_counter()
    out = pl.scan_csv(path, has_header=False, separator="\x1f", quote_char=None, new_columns=["text"],
                      infer_schema=False).select(
        pl.len().alias("lines"), pl.col("text").str.contains("NCCL|Watchdog|iteration").sum().alias("matches")
    ).collect()
    return {"seconds": time.perf_counter() - t0, "lines": int(out["lines"][0]), "matches": int(out["matches"][0])}


def child_parse(path: Path) -> dict:
    """goodput's read path for job logs: a streaming hash, then LineStream chunks through parse_stream."""
    from analysis.ingest.accounting import account
    from analysis.ingest.lines import LineFile, LineStream, hash_only
    from analysis.ingest.contract import ParseContext
    from analysis.ingest.parsers import joblogs
    steps = {"imports": (0.0, _peak_mb())}
    t0 = time.perf_counter()
    raw = hash_only(path)
    steps["hash"] = (time.perf_counter() - t0, _peak_mb())
    t1 = time.perf_counter()
    stream = LineStream(path)
    result = joblogs.parse_stream(stream.frames(), ParseContext(path=path, source="joblogs", host_hint=None))
    steps["stream+parse"] = (time.perf_counter() - t1, _peak_mb())
    assert stream.sha256 == raw.sha256
    t1 = time.perf_counter()
    empty = pl.DataFrame(schema={"line_no": pl.Int64, "text": pl.Utf8})
    counts = account(result, LineFile(path, raw.sha256, path.stat().st_size, empty, stream.rejects, stream.n_lines))
    steps["account"] = (time.perf_counter() - t1, _peak_mb())
    kinds = result.tables["job_log_lines"]["kind"].value_counts().sort("kind")
    return {"seconds": time.perf_counter() - t0, "lines": counts.lines, "rows": counts.rows,
            "skipped": counts.skipped, "rejects": counts.rejects, "steps": steps,
            "kinds": dict(zip(kinds["kind"].to_list(), kinds["count"].to_list()))}


def child_breakdown(path: Path) -> dict:
    """Where parsing spends its time on one 64 MB chunk's worth of lines: the literal screen, then the rest."""
    from analysis.ingest.lines import LineStream
    from analysis.ingest.contract import ParseContext
    from analysis.ingest.parsers import joblogs
    lines = next(LineStream(path).frames())
    t0 = time.perf_counter()
    kept = joblogs._screen(lines)
    t1 = time.perf_counter()
    joblogs._rows(kept, ParseContext(path=path, source="joblogs", host_hint=None), 2024)
    t2 = time.perf_counter()
    return {"prefilter": t1 - t0, "classify": t2 - t1, "kept": kept.height, "lines": lines.height}


def child_ingest(path: Path, workdir: Path) -> dict:
    from analysis import warehouse
    from analysis.ingest.engine import ingest_directory
    db = workdir / "w.duckdb"
    for p in (db, db.with_name(db.name + ".wal")):
        p.unlink(missing_ok=True)
    con = warehouse.connect(db)
    t0 = time.perf_counter()
    summary = ingest_directory(con, workdir / "src")
    seconds = time.perf_counter() - t0
    stored = con.execute("SELECT count(*) FROM job_log_lines").fetchone()[0]
    con.close()
    o = summary.outcomes[0]
    return {"seconds": seconds, "lines": o.lines, "rows": o.rows, "status": o.status, "message": o.message,
            "files": len(summary.outcomes), "stored": stored, "db_mb": db.stat().st_size / 1e6}


def run_child(kind: str, path: Path, workdir: Path) -> dict:
    cmd = [sys.executable, str(Path(__file__).resolve()), "--child", kind, "--path", str(path),
           "--workdir", str(workdir)]
    t0 = time.perf_counter()
    proc = subprocess.run(cmd, capture_output=True, text=True)
    wall = time.perf_counter() - t0
    if proc.returncode != 0:
        return {"error": f"exit {proc.returncode}: {(proc.stderr or '').strip()[-2000:]}", "wall": wall}
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    out["wall"] = wall
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--size-mb", type=float, default=1024)
    ap.add_argument("--workdir", type=Path, default=Path("/tmp/goodput-bench-joblogs"))
    ap.add_argument("--child", choices=["scan", "parse", "ingest", "breakdown"], help=argparse.SUPPRESS)
    ap.add_argument("--path", type=Path, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        fn = {"scan": lambda: child_scan(args.path), "parse": lambda: child_parse(args.path),
              "ingest": lambda: child_ingest(args.path, args.workdir),
              "breakdown": lambda: child_breakdown(args.path)}[args.child]
        out = fn()
        out["peak_mb"] = _peak_mb()
        print(json.dumps(out))
        return

    args.workdir.mkdir(parents=True, exist_ok=True)
    path = args.workdir / "src" / "joblogs" / "slurm-4242.out"
    target = int(args.size_mb * 1024 * 1024)
    if not path.exists() or abs(path.stat().st_size - target) > 1024 * 1024:
        print(f"writing {args.size_mb:g} MB to {path} ...", flush=True)
        n, gen_s = write_log(path, target)
        print(f"  {n:,} lines in {gen_s:.1f} s (generator peak RSS {_peak_mb():,.0f} MB)", flush=True)
    size_mb = path.stat().st_size / 1e6

    results = {}
    for kind in ("scan", "parse", "ingest", "breakdown"):
        print(f"running {kind} ...", flush=True)
        results[kind] = run_child(kind, path, args.workdir)
        if "error" in results[kind]:
            print(f"  {kind} FAILED: {results[kind]['error']}", flush=True)

    n_lines = next((r["lines"] for r in results.values() if "lines" in r), None)
    print(f"\nfile {path}: {size_mb:,.1f} MB, {n_lines:,} lines" if n_lines else f"\nfile {path}: {size_mb:,.1f} MB")
    base = results["scan"].get("seconds")
    print(f"{'measurement':34} {'seconds':>8} {'M lines/s':>10} {'MB/s':>7} {'peak RSS MB':>12} {'vs scan':>8}  detail")
    labels = {"scan": "(a) polars scan_csv + contains", "parse": "(b) goodput stream+parse+account",
              "ingest": "(c) goodput ingest_directory"}
    for kind, r in results.items():
        if kind == "breakdown":
            continue
        if "error" in r:
            print(f"{labels[kind]:34} FAILED after {r['wall']:.1f} s: {r['error'].splitlines()[-1][:150]}")
            continue
        s = r["seconds"]
        ratio = f"{base / s:7.2f}x" if base else "      -"
        if kind == "scan":
            detail = f"{r['matches']:,} matching lines"
        elif kind == "parse":
            detail = f"{r['rows']:,} rows stored, {r['skipped']:,} skipped, {r['rejects']:,} rejects"
        else:
            detail = (f"status {r['status']}, {r['lines']:,} lines, {r['rows']:,} rows ({r['stored']:,} in table), "
                      f"db {r['db_mb']:,.0f} MB{', ' + r['message'] if r['message'] else ''}")
        print(f"{labels[kind]:34} {s:8.2f} {r['lines'] / s / 1e6:10.2f} {size_mb / s:7.1f} {r['peak_mb']:12,.0f}"
              f" {ratio:>8}  {detail}")
    parse = results["parse"]
    if "steps" in parse:
        print("goodput parse steps: " + " | ".join(
            f"{name} {sec:.2f} s (peak so far {peak:,.0f} MB)" for name, (sec, peak) in parse["steps"].items()))
        b = results["breakdown"]
        if "error" not in b:
            print(f"inside parse (separate run): keyword prefilter {b['prefilter']:.2f} s keeps {b['kept']:,} of "
                  f"{b['lines']:,} lines | _classify {b['classify']:.2f} s")
        print("rows by kind: " + ", ".join(f"{k}={v:,}" for k, v in parse["kinds"].items()))


if __name__ == "__main__":
    main()
