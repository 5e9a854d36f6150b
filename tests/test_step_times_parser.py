"""Step times from what training jobs print (issue 32, part 1): each shape's fixture ingested for real, its
(worker, step, step_seconds) rows checked against a reading of the same file done here with plain ``re``, and
every line accounted for. The fixtures and where their shapes come from: fixtures/joblogs/steps/README.md."""
import re
import shutil
from datetime import datetime
from pathlib import Path

import polars as pl
import pytest

from analysis import warehouse
from analysis.ingest.contract import IngestOptions, ParseContext
from analysis.ingest.engine import ingest_directory
from analysis.ingest.lines import read_lines
from analysis.ingest.parsers import joblogs
from analysis.ingest.parts import combine
from tests.conftest import parse_file

STEPS = Path(__file__).parent / "fixtures" / "joblogs" / "steps"
ANSI = re.compile(r"\x1b\[[0-9;]*m")
# what launchers put before a line, read here on its own: srun --label, pdsh host, torchrun --tee, PyTorch's rank
LABEL = re.compile(r"^\s*(\d+): ")
HOST = re.compile(r"^(vm-\d+-\d+): ")
DEFAULT = re.compile(r"\[default(\d+)\]:")
RANK_PREFIX = re.compile(r"\[rank(\d+)\]:")
STAMP = re.compile(r"(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d(?:[.,]\d+)?)")


def _time(text: str) -> datetime | None:
    m = STAMP.search(text)
    if not m:
        return None
    s = m.group(1).replace(",", ".")
    return datetime.strptime(s, "%Y-%m-%d %H:%M:%S.%f" if "." in s else "%Y-%m-%d %H:%M:%S")


def _lines(name: str) -> list[str]:
    """The fixture's physical lines as the ingest numbers them (1-based; CRs inside a line stay in it)."""
    return (STEPS / name).read_bytes().decode().split("\n")[:-1]


def _with_gaps(rows: list[dict]) -> list[tuple]:
    """(worker, step, seconds): seconds as printed, else the time since the worker's previous line of the same
    shape over the steps between (none for its first line or a step not above the last)."""
    last, out = {}, []
    for r in rows:
        key = (r["worker"], r["shape"])
        seconds = r.get("seconds")
        if seconds is None and key in last and r["time"] is not None:
            t0, s0 = last[key]
            if r["step"] > s0 and r["time"] >= t0:
                seconds = (r["time"] - t0).total_seconds() / (r["step"] - s0)
        if r["time"] is not None:
            last[key] = (r["time"], r["step"])
        out.append((r["worker"], r["step"], None if seconds is None else round(seconds, 6)))
    return out


def _ingest(tmp_path: Path, name: str):
    src = tmp_path / "src"
    (src / "joblogs").mkdir(parents=True)
    shutil.copy(STEPS / name, src / "joblogs" / name)
    con = warehouse.connect(tmp_path / "w.duckdb")
    outcomes = ingest_directory(con, src).outcomes
    assert [o.status for o in outcomes] == ["ok"]
    return con


def _accounted(con, name: str, step_lines: list[int]) -> pl.DataFrame:
    """Every line one disposition; the step rows: one per line, on the lines read here."""
    lines, rows, rejects, skipped, merged = con.execute(
        "SELECT lines, row_lines, rejects, skipped, merged FROM ingested_files WHERE path LIKE ?",
        [f"%{name}"]).fetchall()[0]
    assert lines == len(_lines(name)) == rows + rejects + skipped + merged
    got = con.sql("SELECT * FROM job_log_lines WHERE step IS NOT NULL ORDER BY line_no").pl()
    assert got["line_no"].to_list() == step_lines  # one row per line
    assert set(got["job_id"]) == {re.search(r"slurm-(\d+)", name).group(1)}
    return got


def _stored(got: pl.DataFrame, worker: str) -> list[tuple]:
    return [(r[worker], r["step"], None if r["step_seconds"] is None else round(r["step_seconds"], 6))
            for r in got.iter_rows(named=True)]


def test_torchtitan_per_rank_steps_with_colours(tmp_path):
    """torchrun --role rank --tee 3: "[rankN]:[titan] <time> - root - INFO - step: N  loss: ...  tps: T" in colour
    (the default). No step time printed: a rank's tokens per step (local batch size x sequence length x gradient
    accumulation steps, from "Trainer is initialized with ...") over its tps, the tokens per second since its
    previous line."""
    name = "slurm-8101.out"
    expected, where, tokens = [], [], None
    for no, line in enumerate(_lines(name), 1):
        text = ANSI.sub("", line)
        batch = re.search(r"local batch size (\d+), .*gradient accumulation steps (\d+), sequence length (\d+)", text)
        if batch:
            tokens = int(batch.group(1)) * int(batch.group(2)) * int(batch.group(3))
        m = re.search(r"- INFO - step:\s+(\d+)\s+loss:.*  tps: ([\d,]+)  ", text)
        if m:
            where.append(no)
            expected.append((int(RANK_PREFIX.match(text).group(1)), int(m.group(1)),
                             round(tokens / int(m.group(2).replace(",", "")), 6)))
    con = _ingest(tmp_path, name)
    got = _accounted(con, name, where)
    assert _stored(got, "rank") == expected
    assert set(got["kind"]) == {"step_time"} and set(got["code"]) == {"torchtitan"}
    assert got["log_time"].to_list() == [_time(ANSI.sub("", _lines(name)[n - 1])) for n in where]  # [titan]'s, ms kept
    assert not got["message"].str.contains("\x1b").any()
    at30 = got.filter(pl.col("step") == 30).sort("rank")["step_seconds"].to_list()
    assert at30[3] > 1.2 * at30[0]  # rank 3 fell behind
    # the time between a rank's lines over the steps between says the same, within 1%
    gaps = _with_gaps([{"worker": r, "shape": "titan", "step": s, "time": t}
                       for (r, s, _), t in zip(expected, got["log_time"].to_list())])
    assert all(abs(g / x - 1) < 0.01 for (_, s, g), (_, _, x) in zip(gaps, expected) if g is not None)
    # the validation line, the GC line and the batch line are no steps
    assert con.sql("SELECT count(*) FROM job_log_lines WHERE message LIKE '%validate%' OR message LIKE '%batch%'"
                   ).fetchall()[0][0] == 0


def test_megatron_iterations_keep_progress_and_gain_step_times(tmp_path):
    """Megatron-LM's " [time] iteration N/ M | ... | elapsed time per iteration (ms): X |": still kind progress
    (code = the iteration, for C4's last-progress time), now with step and step_seconds."""
    name = "slurm-8102.out"
    expected, where = [], []
    for no, line in enumerate(_lines(name), 1):
        m = re.search(r"\] iteration\s+(\d+)/\s*\d+ \|.*elapsed time per iteration \(ms\): ([\d.]+) \|", line)
        if m:
            where.append(no)
            expected.append((None, int(m.group(1)), round(float(m.group(2)) / 1000, 6)))
    con = _ingest(tmp_path, name)
    got = _accounted(con, name, where)
    assert _stored(got, "rank") == expected
    assert set(got["kind"]) == {"progress"} and got["code"].to_list() == [str(s) for _, s, _ in expected]
    assert got["log_time"].dt.strftime("%H:%M:%S").to_list() == ["10:00:34", "10:02:37", "10:04:41", "10:06:44",
                                                                 "10:08:54"]


def test_deepspeed_steps_and_throughput_lines(tmp_path):
    """A real Megatron-DeepSpeed run through pdsh (host prefixes): DeepSpeed's "[Rank 0] step=N, skipped=" and its
    ThroughputTimer "global_step=N, RunningAvgSamplesPerSec=" lines (seconds between a host's lines of one
    shape), Megatron's iterations on the other host (seconds printed)."""
    name = "slurm-8103.out"
    expected, where = [], []
    for no, line in enumerate(_lines(name), 1):
        host = HOST.match(line).group(1)
        ds = re.search(r"\[Rank \d+\] step=(\d+), skipped=", line)
        tput = re.search(r"global_step=(\d+), RunningAvgSamplesPerSec=", line)
        mega = re.search(r"iteration\s+(\d+)/\s*\d+ \|.*elapsed time per iteration \(ms\): ([\d.]+)", line)
        if ds or tput:
            expected.append({"worker": host, "shape": "ds" if ds else "tput", "step": int((ds or tput).group(1)),
                             "time": _time(line)})
        elif mega:
            expected.append({"worker": host, "shape": "megatron", "step": int(mega.group(1)),
                             "seconds": float(mega.group(2)) / 1000, "time": None})
        else:
            continue
        where.append(no)
    con = _ingest(tmp_path, name)
    got = _accounted(con, name, where)
    assert _stored(got, "host") == _with_gaps(expected)
    codes = dict(zip(got["line_no"], got["code"]))
    assert codes[where[0]] == "deepspeed" and "deepspeed_throughput" in codes.values()
    # the time between DeepSpeed's step lines is Megatron's own iteration time, within 0.5%
    ds = got.filter((pl.col("code") == "deepspeed") & pl.col("step_seconds").is_not_null()).sort("step")
    mega = got.filter(pl.col("kind") == "progress").sort("step")
    both = ds.join(mega, on="step", suffix="_m")
    assert both.height == 5 and ((both["step_seconds"] / both["step_seconds_m"] - 1).abs() < 0.005).all()


def test_hugging_face_tqdm_bar_and_deepspeed_lines(tmp_path):
    """A Trainer's tqdm bar rewritten with CRs (many updates on one physical line, DeepSpeed's timers and the
    Trainer's {'loss': ...} written after it): one row per line, the bar's last update with a rate (s/it, or
    1 / it/s); DeepSpeed's step lines between them; the dict lines alone carry no step."""
    name = "slurm-8104.out"
    expected, where = [], []
    for no, line in enumerate(_lines(name), 1):
        ds = re.search(r"\[Rank \d+\] step=(\d+), skipped=", line)
        bars = re.findall(r"(\d+)/(\d+) \[[^\]]*?, (\d+\.\d+)(s/it|it/s)", line)
        if ds:
            expected.append({"worker": None, "shape": "ds", "step": int(ds.group(1)), "time": _time(line)})
        elif bars:
            n, _, rate, unit = bars[-1]
            expected.append({"worker": None, "shape": "bar", "step": int(n), "time": None,
                             "seconds": float(rate) if unit == "s/it" else 1 / float(rate)})
        else:
            continue
        where.append(no)
    con = _ingest(tmp_path, name)
    got = _accounted(con, name, where)
    assert [(s, x) for _, s, x in _stored(got, "host")] == [(s, x) for _, s, x in _with_gaps(expected)]
    assert set(got.filter(pl.col("code") != "deepspeed")["code"]) == {"tqdm/345"}
    assert got.filter(pl.col("code") == "tqdm/345")["rank"].null_count() == 4  # "[Rank 0]" after a bar: not its rank
    assert got.filter(pl.col("step") == 10)["message"].to_list() == ["   2%|          | 10/345 [00:10<05:40, 1.13it/s]"]


def test_srun_label_names_the_task(tmp_path):
    """srun --label: accelerate's bar on each node's local main (tasks 0 and 2; task 2 slows down from step 5),
    iteration lines from the last task; the label is the task and, without another rank, the rank."""
    name = "slurm-8105.out"
    expected, where = [], []
    for no, line in enumerate(_lines(name), 1):
        task = LABEL.match(line)
        bars = re.findall(r"(\d+)/(\d+) \[[^\]]*?, (\d+\.\d+)s/it", line)
        mega = re.search(r"iteration\s+(\d+)/\s*\d+ \|.*elapsed time per iteration \(ms\): ([\d.]+)", line)
        if bars:
            expected.append((int(task.group(1)), int(bars[-1][0]), round(float(bars[-1][2]), 6)))
        elif mega:
            expected.append((int(task.group(1)), int(mega.group(1)), round(float(mega.group(2)) / 1000, 6)))
        else:
            continue
        where.append(no)
    con = _ingest(tmp_path, name)
    got = _accounted(con, name, where)
    assert _stored(got, "task") == expected
    assert got["rank"].to_list() == got["task"].to_list()
    slow = got.filter((pl.col("task") == 2) & (pl.col("step") >= 5))["step_seconds"]
    assert (slow > 1.2 * 2.31).all()


def test_torchrun_tee_local_ranks(tmp_path):
    """torchrun --tee 3 (default role): "[defaultN]:" names a local rank; torchtitan without colours, one rank's
    lines with a fork's printed "step_time:"; a traceback's last line that mentions a step stays an exception."""
    name = "slurm-8106.out"
    expected, where = [], []
    for no, line in enumerate(_lines(name), 1):
        m = re.search(r"- INFO - step:\s+(\d+)\s+loss:", line)
        if m:
            given = re.search(r"step_time:\s+([\d.]+)", line)
            expected.append({"worker": int(DEFAULT.match(line).group(1)), "shape": "titan", "step": int(m.group(1)),
                             "time": _time(line), "seconds": float(given.group(1)) if given else None})
            where.append(no)
    con = _ingest(tmp_path, name)
    got = _accounted(con, name, where)
    assert _stored(got, "local_rank") == _with_gaps(expected)
    assert got["rank"].null_count() == got.height  # a local rank is no global rank
    error = con.sql("SELECT kind, code, rank, local_rank, step FROM job_log_lines WHERE step IS NULL").fetchall()
    assert error == [("exception", "RuntimeError", 2, 2, None)]


@pytest.mark.parametrize("name", ["slurm-8101.out", "slurm-8106.out"])
def test_a_file_read_in_pieces_keeps_each_workers_previous_line(name):
    """The engine reads a large log in pieces: the seconds of a piece's first lines come from the pieces before
    (torchtitan's batch line; each worker's previous line): the rows are those of the whole file read at once."""
    path = STEPS / name
    ctx = ParseContext(path=path, source="joblogs", host_hint=None, options=IngestOptions())
    lines = read_lines(path).lines
    whole = joblogs.parse(lines, ctx).tables["job_log_lines"]
    pieces = combine(joblogs.stream_parts([lines.slice(0, 12), lines.slice(12, 5), lines.slice(17)], ctx))
    cols = ["line_no", "rank", "local_rank", "step", "step_seconds"]
    assert pieces.tables["job_log_lines"].select(cols).equals(whole.select(cols))
    assert whole.filter(pl.col("step").is_not_null())["step_seconds"].null_count() == (0 if "8101" in name else 4)


@pytest.mark.parametrize("line,step,seconds", [
    ("iter 1631: loss 4.0863, time 561.94ms", 1631, 0.56194),  # nanoGPT
    ("iter 20: loss 6.1021, time 98.12ms, mfu 31.02%", 20, 0.09812),
    ("Epoch 0:  10%|█         | 100/1000 [01:40<15:00,  1.00it/s, v_num=0, loss=1.23]", 100, 1.0),  # Lightning
])
def test_other_step_lines(tmp_path, line, step, seconds):
    path = tmp_path / "slurm-42.out"
    path.write_text(line + "\n")
    rows = parse_file(joblogs.parse, path, "joblogs")[0].tables["job_log_lines"]
    assert rows.select("kind", "step", "step_seconds").rows() == [("step_time", step, pytest.approx(seconds))]
