from datetime import datetime
from pathlib import Path

import polars as pl
import pytest

from analysis.ingest.contract import IngestOptions
from analysis.ingest.hosts import HostlistError, expand_hostlist
from analysis.ingest.parsers import sacct
from tests.conftest import parse_file

HEADER = "JobID|JobIDRaw|JobName|User|Account|Partition|QOS|Priority|State|ExitCode|Reason|Submit|Eligible|Start|End|Elapsed|NNodes|AllocTRES|NodeList|Restarts|SubmitLine"


def row(jobid="100", raw=None, name="train", state="COMPLETED", exit_code="0:0", start="2024-03-01T10:00:00",
        end="2024-03-01T12:00:00", elapsed="02:00:00", nnodes="1", tres="cpu=8,gres/gpu=8,node=1",
        nodes="gpu001", submit_line="sbatch train.sh", delim="|"):
    raw = raw or jobid
    return delim.join([jobid, raw, name, "alice", "research", "gpu", "normal", "1000", state, exit_code, "None",
                       "2024-03-01T09:00:00", "2024-03-01T09:00:00", start, end, elapsed, nnodes, tres, nodes, "0",
                       submit_line])


def parse_text(tmp_path: Path, text: str, **opts):
    path = tmp_path / "sacct.txt"
    path.write_text(text)
    result, counts = parse_file(sacct.parse, path, "slurm", IngestOptions(**opts))
    return result, counts, result.tables["sacct_records"]


def test_midnight_fixture_job_states(datasets):
    result, counts = parse_file(sacct.parse, datasets / "gcm-slurm-fixtures/sample-sacct-output-midnight-edge-case.txt", "slurm")
    allocs = result.tables["sacct_records"].filter(pl.col("step_id").is_null())
    states = dict(allocs.group_by("state").len().iter_rows())
    # the dataset README's job-level counts
    assert states == {"FAILED": 259, "CANCELLED": 24, "COMPLETED": 18, "OUT_OF_MEMORY": 2, "REQUEUED": 2, "TIMEOUT": 1}
    first = allocs.filter(pl.col("job_id") == "39125549").row(0, named=True)
    assert first["cancelled_by"] == "1185300516"
    assert first["end_time"] == datetime(2021, 4, 7, 23, 59, 38)
    assert counts.lines == 1187 and counts.row_lines == 1186 and counts.skipped == 1


def test_multiline_fixture_is_repaired(datasets):
    result, counts = parse_file(sacct.parse, datasets / "gcm-slurm-fixtures/sample-sacct-multiple-multiline.txt", "slurm")
    df = result.tables["sacct_records"]
    assert result.format == "sacct|#"
    assert counts.merged == 3 and counts.rejects == 0 and df.height == 6
    job = df.filter((pl.col("job_id") == "201729") & pl.col("step_id").is_null()).row(0, named=True)
    assert job["state"] == "FAILED" and job["exit_code"] == 6 and job["n_nodes"] == 128 and job["n_gpus"] == 1024
    assert len(job["nodes"]) == 128 and job["nodes"][0] == "node1083"
    requeued = df.filter(pl.col("job_id") == "201844")
    assert requeued.height == 3 and "\n" in requeued["submit_line"][0]


def test_invalid_utf8_and_truncated_rows(datasets):
    result, counts = parse_file(sacct.parse, datasets / "gcm-slurm-fixtures/sample-sacct-output-invalid-utf8.txt", "slurm")
    df = result.tables["sacct_records"]
    assert df.height == 11
    job = df.filter((pl.col("job_id") == "3557891") & pl.col("step_id").is_null()).row(0, named=True)
    assert (job["state"], job["exit_code"], job["exit_signal"], job["n_gpus"], job["nodes"]) == ("FAILED", 0, 9, 8, ["learnnode047"])
    assert any("\ufffd" in name for name in df["job_name"].drop_nulls())
    result, counts = parse_file(sacct.parse, datasets / "gcm-slurm-fixtures/sample-sacct-output-with-invalid-lines.txt", "slurm")
    assert counts.rejects == 1 and "truncated row" in result.rejects["reason"][0]


def test_job_id_shapes_and_fields(tmp_path):
    text = "\n".join([HEADER, row("100"), row("100.batch", name="batch"), row("100.extern", name="extern"),
                      row("100.0", name="python"), row("200_4", raw="204"), row("200_[5-7]", raw="200", state="PENDING",
                      start="Unknown", end="Unknown", elapsed="00:00:00", nodes="None assigned"),
                      row("300+1", raw="301"), row("300+1.0", raw="301.0")])
    _, counts, df = parse_text(tmp_path, text + "\n")
    by = {(r["job_id"], r["step_id"]): r for r in df.iter_rows(named=True)}
    assert set(by) == {("100", None), ("100", "batch"), ("100", "extern"), ("100", "0"), ("200_4", None),
                       ("200_[5-7]", None), ("300+1", None), ("300+1", "0")}
    assert by[("200_4", None)]["array_job_id"] == 200 and by[("200_4", None)]["array_task_id"] == 4
    assert by[("200_4", None)]["job_id_raw"] == "204"
    assert by[("200_[5-7]", None)]["array_task_spec"] == "[5-7]" and by[("200_[5-7]", None)]["start_time"] is None
    assert by[("200_[5-7]", None)]["nodes"] == []
    assert by[("300+1", None)]["het_offset"] == 1 and by[("300+1", "0")]["job_id_raw"] == "301"
    assert counts.row_lines == 8


def test_states_exit_codes_durations_gpus(tmp_path):
    text = "\n".join([HEADER,
                      row("1", state="CANCELLED by 1234", exit_code="0:15", elapsed="2-03:04:05"),
                      row("2", state="NODE_FAIL", exit_code="1:0", tres="cpu=64,gres/gpu:a100=8,node=1"),
                      row("3", state="BRAND_NEW_STATE", tres="billing=3,cpu=2,gres/gpu=2,gres/gpu:h100=2"),
                      row("4", tres="")])
    _, _, df = parse_text(tmp_path, text)
    r = {x["job_id"]: x for x in df.iter_rows(named=True)}
    assert (r["1"]["state"], r["1"]["cancelled_by"], r["1"]["exit_signal"]) == ("CANCELLED", "1234", 15)
    assert r["1"]["elapsed_s"] == ((2 * 24 + 3) * 60 + 4) * 60 + 5
    assert r["2"]["n_gpus"] == 8 and r["2"]["exit_code"] == 1
    assert r["3"]["state"] == "BRAND_NEW_STATE" and r["3"]["n_gpus"] == 2  # untyped total wins, not 2+2
    assert r["4"]["n_gpus"] is None


def test_nodelist_expansion():
    assert expand_hostlist("gpu[001-004,010],login1") == ("gpu001", "gpu002", "gpu003", "gpu004", "gpu010", "login1")
    assert expand_hostlist("r[1-2]-n[08-09]") == ("r1-n08", "r1-n09", "r2-n08", "r2-n09")
    assert expand_hostlist("a[9-11]") == ("a9", "a10", "a11")
    with pytest.raises(HostlistError):
        expand_hostlist("gpu[5-3]")


def test_timezone_conversion(tmp_path):
    text = HEADER + "\n" + row("1", start="2024-07-01T10:00:00", end="2024-07-01T12:00:00")
    _, _, df = parse_text(tmp_path, text, tz="Europe/Paris")
    assert df["start_time"][0] == datetime(2024, 7, 1, 8, 0, 0)  # CEST = UTC+2


def test_pipe_in_job_name_is_repaired_when_unambiguous(tmp_path):
    text = "\n".join([HEADER, row("1", name="a|b|c"), row("2", submit_line="sbatch --wrap 'x | y'")])
    _, counts, df = parse_text(tmp_path, text)
    names = dict(zip(df["job_id"], df["job_name"]))
    assert names["1"] == "a|b|c"
    assert df.filter(pl.col("job_id") == "2")["submit_line"][0] == "sbatch --wrap 'x | y'"
    assert counts.rejects == 0


def test_ambiguous_extra_delimiter_is_rejected(tmp_path):
    header = "JobID|JobName|Comment|State"
    _, counts, df = parse_text(tmp_path, f"{header}\n1|a|b|c|COMPLETED\n2|x|y|FAILED\n")
    assert df["job_id"].to_list() == ["2"] and counts.rejects == 1


def test_newline_inside_submit_line_is_joined(tmp_path):
    text = "\n".join([HEADER, row("1", submit_line="sbatch \\"), "  --wrap 'python x.py'", row("2")])
    result, counts, df = parse_text(tmp_path, text)
    assert counts.merged == 1 and df.height == 2
    assert df["submit_line"][0] == "sbatch \\\n  --wrap 'python x.py'"


def test_headerless_and_other_delimiters(tmp_path):
    _, _, df = parse_text(tmp_path, row("7") + "\n")
    assert df["job_id"].to_list() == ["7"] and df["n_gpus"][0] == 8
    text = HEADER.replace("|", "^|^") + "\n" + row("8", delim="^|^") + "\n"
    result, _, df = parse_text(tmp_path, text)
    assert result.format == "sacct^|^" and df["state"][0] == "COMPLETED"


def test_garbage_job_id_is_rejected(tmp_path):
    _, counts, df = parse_text(tmp_path, HEADER + "\n" + row("abc") + "\n" + row("9"))
    assert df["job_id"].to_list() == ["9"] and counts.rejects == 1


def test_second_header_with_other_columns_starts_a_new_segment(tmp_path):
    text = "\n".join([HEADER, row("1"), "JobID|Start|State|End", "500|2024-03-01T11:05:00|COMPLETED|2024-03-01T12:00:00"])
    _, counts, df = parse_text(tmp_path, text)
    r = df.filter(pl.col("job_id") == "500").row(0, named=True)
    assert r["state"] == "COMPLETED" and r["start_time"] == datetime(2024, 3, 1, 11, 5)
    assert counts.skipped == 2 and counts.rejects == 0


def test_shifted_or_unparseable_fields_are_rejected_not_stored(tmp_path):
    shifted = row("2", state="2024-03-01T10:00:00")  # a headerless dump in another column order
    bad_time = row("3", start="01/03/2024 10:00")
    spaced = row("4", start="2024-03-01 10:00:00")  # SLURM_TIME_FORMAT with a space: fine
    result, counts, df = parse_text(tmp_path, "\n".join([HEADER, shifted, bad_time, spaced]))
    assert df["job_id"].to_list() == ["4"] and df["start_time"][0] == datetime(2024, 3, 1, 10, 0)
    reasons = sorted(result.rejects["reason"].to_list())
    assert reasons == ["unparseable Start time '01/03/2024 10:00'", "unparseable State '2024-03-01T10:00:00'"]


def test_tool_message_is_not_folded_into_submit_line(tmp_path):
    text = "\n".join([HEADER, row("1"), "sacct: error: slurmdbd: Getting response to message type 1444"])
    result, counts, df = parse_text(tmp_path, text)
    assert df["submit_line"][0] == "sbatch train.sh" and counts.rejects == 1


def test_dst_fall_back_end_follows_elapsed(tmp_path):
    text = HEADER + "\n" + row("1", start="2024-10-27T02:50:00", end="2024-10-27T02:10:00", elapsed="00:20:00")
    _, _, df = parse_text(tmp_path, text, tz="Europe/Paris")
    r = df.row(0, named=True)
    assert r["start_time"] == datetime(2024, 10, 27, 0, 50) and r["end_time"] == datetime(2024, 10, 27, 1, 10)


# `sacct --parsable2 --format=Cluster,JobID,JobIDRaw,JobName,State,ExitCode,Start,End,Elapsed,NNodes,AllocTRES,NodeList`
# on a slurmdbd that serves two clusters: every row, steps too, names its cluster.
CLUSTER_DUMP = """\
Cluster|JobID|JobIDRaw|JobName|State|ExitCode|Start|End|Elapsed|NNodes|AllocTRES|NodeList
rsc2|4711|4711|llm-pretrain|NODE_FAIL|1:0|2024-03-01T10:00:00|2024-03-01T12:00:00|02:00:00|2|billing=24,cpu=192,gres/gpu=16,mem=3600G,node=2|gpu[0001-0002]
rsc2|4711.batch|4711.batch|batch|CANCELLED|0:15|2024-03-01T10:00:00|2024-03-01T12:00:00|02:00:00|1|cpu=96,gres/gpu=8,mem=1800G,node=1|gpu0001
rsc1|4711|4711|eval|COMPLETED|0:0|2024-03-01T10:30:00|2024-03-01T11:00:00|00:30:00|1|billing=12,cpu=96,gres/gpu=8,mem=1800G,node=1|gpu0001
"""


def test_cluster_field_is_kept_and_null_without_it(tmp_path):
    _, counts, df = parse_text(tmp_path, CLUSTER_DUMP)
    assert counts.rejects == 0 and counts.row_lines == 3
    rows = [(r["cluster"], r["job_id"], r["step_id"], r["state"]) for r in df.iter_rows(named=True)]
    assert rows == [("rsc2", "4711", None, "NODE_FAIL"), ("rsc2", "4711", "batch", "CANCELLED"),
                    ("rsc1", "4711", None, "COMPLETED")]
    _, _, df = parse_text(tmp_path, HEADER + "\n" + row("1") + "\n")  # the usual dump: no Cluster column
    assert df["cluster"].to_list() == [None]


def test_cluster_column_reaches_an_older_warehouse(tmp_path):
    """A warehouse from before the column gains it on open (schema/warehouse.sql's ALTER), and ingest fills it."""
    from analysis import warehouse
    from analysis.ingest.engine import ingest_directory

    path, src = tmp_path / "w.duckdb", tmp_path / "src"
    warehouse.connect(path).close()
    con = warehouse.connect(path)
    con.execute("UPDATE goodput_schema SET digest = 'an older schema'")
    con.execute("ALTER TABLE sacct_records DROP COLUMN cluster")
    con.close()
    (src / "slurm").mkdir(parents=True)
    (src / "slurm" / "sacct-2024-03-01.txt").write_text(CLUSTER_DUMP)
    (src / "slurm" / "sacct-2024-03-02.txt").write_text(HEADER + "\n" + row("9") + "\n")
    con = warehouse.connect(path)
    try:
        ingest_directory(con, src)
        got = con.execute("SELECT job_id, step_id, cluster FROM sacct_records ORDER BY file, line_no").fetchall()
        assert got == [("4711", None, "rsc2"), ("4711", "batch", "rsc2"), ("4711", None, "rsc1"), ("9", None, None)]
    finally:
        con.close()
