"""A fleet of two simulated clusters whose host names collide (both have gpu0001..gpu0008): each cluster's tables
in the fleet equal a run on that cluster alone, no export of one names the other's hosts, the fleet's SQL and
Parquet lake keep the clusters apart, and Dagster materialises each cluster partition with the multiprocess
executor."""
import importlib
import json
import re
import shutil
from pathlib import Path

import duckdb
import pytest
from click.testing import CliRunner

from analysis import warehouse
from analysis.fleet import identity
from analysis.fleet.clusters import FleetError, clusters_in
from analysis.fleet.views import connect
from analysis.ingest.engine import ingest_directory
from analysis.ingest.options import load_options
from pipelines.cli import main
from pipelines.runner import run_pipeline

CLUSTERS = ("a", "b")
# The run's own bookkeeping (when and from what each step was built) and the warehouse's name for itself.
MACHINERY = {"asset_inputs", "derived_marks", "goodput_schema", "withheld_steps", "warehouse_cluster"}
WALL_CLOCK = {"ingested_at", "verified_at", "trained_at", "built_at"}  # when a file was read, a model trained, actions built


@pytest.fixture(scope="module")
def fleet(tmp_path_factory):
    root = tmp_path_factory.mktemp("fleet")
    runner = CliRunner()
    simulated = runner.invoke(main, ["simulate", "--fleet", "a:10:small,b:8:small", "--days", "4", "--seed", "3",
                                     "--out", str(root / "src")])
    assert simulated.exit_code == 0, simulated.output
    ran = runner.invoke(main, ["run", "--fleet", str(root / "src"), "--db-dir", str(root / "db"),
                               "--out", str(root / "out"), "--jobs", "2", "-q"])
    alone = {c: run_pipeline(root / "src" / c, root / "alone" / f"{c}.duckdb", root / "alone-out" / c, cluster=c)
             for c in CLUSTERS}
    return root, ran, alone


def _digests(con: duckdb.DuckDBPyConnection, table: str, where: str = "") -> tuple[int, int]:
    """Rows and an order-free digest of a table's content, the wall-clock columns aside, and the cluster column
    (the fleet view's, and sacct's own Cluster field, which the fleet view leaves out as equal to it)."""
    keep = f"lambda c: c NOT IN ({', '.join(repr(c) for c in sorted(WALL_CLOCK | {'cluster'}))})"
    return con.execute(f'SELECT count(*), coalesce(sum(hash(*COLUMNS({keep}))::HUGEINT), 0) FROM "{table}" {where}'
                       ).fetchall()[0]


def test_the_fleet_run_builds_every_cluster_and_the_fleet_report(fleet):
    root, ran, _ = fleet
    assert ran.exit_code == 0, ran.output
    assert re.search(r"Fleet: a ok, b ok", ran.output), ran.output
    assert {p.stem for p in (root / "db").glob("*.duckdb")} >= set(CLUSTERS)
    page = (root / "out" / "fleet" / "fleet-report.html").read_text()
    assert all(f"../{c}/reports/" in page for c in CLUSTERS)  # links to each cluster's own report


def test_each_clusters_tables_in_the_fleet_equal_a_run_on_it_alone(fleet):
    root, _, alone = fleet
    fleet_con = connect(root / "db")
    compared = 0
    for c in CLUSTERS:
        assert alone[c].status == "ok", alone[c].report()
        own = duckdb.connect(str(root / "alone" / f"{c}.duckdb"), read_only=True)
        tables = [t for (t,) in own.execute("SELECT table_name FROM information_schema.tables WHERE table_schema = "
                                            "'main' AND table_type = 'BASE TABLE'").fetchall() if t not in MACHINERY]
        for table in tables:
            assert _digests(fleet_con, table, f"WHERE cluster = '{c}'") == _digests(own, table), (c, table)
            compared += 1
        own.close()
    assert compared > 80  # every table of both clusters, not a few


def _exported_hosts(exports: Path) -> set[str]:
    listed = json.loads((exports / "blocklist.json").read_text())
    return {e["host"] for e in listed["entries"]}


def test_no_export_of_one_cluster_names_a_host_of_the_other(fleet):
    root, _, _ = fleet
    con = connect(root / "db")
    exported = {}
    for c in CLUSTERS:
        exports = root / "out" / c / "exports"
        listed = json.loads((exports / "blocklist.json").read_text())
        assert listed["cluster"] == c
        hosts = _exported_hosts(exports)
        # the hosts this cluster's own data names: an export names no host only the other cluster has
        own = {h for (h,) in con.execute("SELECT DISTINCT host FROM node_events WHERE cluster = ?", [c]).fetchall()}
        assert hosts <= own, (c, hosts - own)
        assert hosts == _exported_hosts(root / "alone-out" / c / "exports"), c  # what a run of it alone exports
        lines = (exports / "drain.sh").read_text().splitlines()  # every scontrol and sinfo call names its cluster
        assert f"SCONTROL=(scontrol --clusters={c})" in lines and f"SINFO=(sinfo --clusters={c})" in lines
        exported[c] = hosts
    assert any(exported.values())  # the small profile fails often enough that something is exported
    other = {h for (h,) in con.execute("SELECT DISTINCT host FROM node_events WHERE cluster = 'b'").fetchall()}
    mine = {h for (h,) in con.execute("SELECT DISTINCT host FROM node_events WHERE cluster = 'a'").fetchall()}
    assert other & mine  # the two clusters do share host names: the test above is not vacuous


def test_sql_over_the_fleet_and_the_parquet_lake_keep_the_clusters_apart(fleet):
    root, _, _ = fleet
    runner = CliRunner()
    each = {c: duckdb.connect(str(root / "db" / f"{c}.duckdb"), read_only=True).execute(
        "SELECT count(*) FROM jobs").fetchall()[0][0] for c in CLUSTERS}
    answer = runner.invoke(main, ["sql", "--db-dir", str(root / "db"), "--json",
                                  "SELECT cluster, count(*) AS n FROM jobs GROUP BY ALL ORDER BY cluster"])
    assert answer.exit_code == 0, answer.output
    assert {r["cluster"]: r["n"] for r in json.loads(answer.output)} == each
    # a cluster's own views (node_states, event_episodes) read its own tables, not the fleet's union of them
    for view in ("node_states", "event_episodes"):
        own = {c: duckdb.connect(str(root / "db" / f"{c}.duckdb"), read_only=True).execute(
            f"SELECT count(*) FROM {view}").fetchall()[0][0] for c in CLUSTERS}
        answer = runner.invoke(main, ["sql", "--db-dir", str(root / "db"), "--json",
                                      f"SELECT cluster, count(*) AS n FROM {view} GROUP BY ALL ORDER BY cluster"])
        assert answer.exit_code == 0 and {r["cluster"]: r["n"] for r in json.loads(answer.output)} == own, view
    refused = runner.invoke(main, ["sql", "--db-dir", str(root / "db"), f"ATTACH '{root}/x.duckdb' AS x"])
    assert refused.exit_code != 0 and "refused" in refused.output
    lake = root / "lake"
    exported = runner.invoke(main, ["fleet", "export", "--db-dir", str(root / "db"), "--parquet", str(lake)])
    assert exported.exit_code == 0, exported.output
    read = duckdb.sql(f"SELECT cluster, count(*) FROM read_parquet('{lake}/table=jobs/*/*.parquet', "
                      "hive_partitioning = true) GROUP BY ALL").fetchall()
    assert dict(read) == each


def test_dagster_materialises_each_cluster_partition_with_the_multiprocess_executor(fleet, monkeypatch, tmp_path):
    """The same warehouses, run again through Dagster: nothing changed, so each partition's nightly is a
    no-change rerun; the fleet report is then rebuilt by its own job."""
    from dagster import DagsterInstance, execute_job, reconstructable

    root, _, _ = fleet
    monkeypatch.setenv("GOODPUT_FLEET_SOURCE", str(root / "src"))
    monkeypatch.setenv("GOODPUT_FLEET_DB_DIR", str(root / "db"))
    monkeypatch.setenv("GOODPUT_OUT", str(root / "out"))
    module = importlib.reload(importlib.import_module("pipelines.fleet_definitions"))
    assert module.clusters.get_partition_keys() == list(CLUSTERS)
    job = module.fleet_nightly_job()
    assert job.executor_def.name == "multiprocess"
    (tmp_path / "dagster").mkdir()
    with DagsterInstance.local_temp(str(tmp_path / "dagster")) as instance:
        for c in CLUSTERS:
            result = execute_job(reconstructable(module.fleet_nightly_job), instance=instance,
                                 tags={"dagster/partition": c})
            assert result.success, c
            events = result.get_asset_materialization_events()
            assert [(e.asset_key.to_user_string(), e.partition) for e in events] == [("cluster_nightly", c)]
            assert events[0].materialization.metadata["status"].value == "ok"
        report = execute_job(reconstructable(module.fleet_report_run_job), instance=instance)
        assert report.success
    # the nightly schedule launches every cluster's partition, each its own run
    from datetime import datetime

    from dagster import build_schedule_context

    requests = list(module.fleet_nightly_schedule(build_schedule_context(
        scheduled_execution_time=datetime(2024, 3, 5, 3))))
    assert sorted((r.partition_key, r.run_key) for r in requests) == [(c, f"2024-03-05-{c}") for c in CLUSTERS]
    assert (root / "out" / "fleet" / "fleet-report.html").is_file()


def test_a_warehouse_holds_one_cluster_and_sacct_dumps_of_another_are_named(fleet, tmp_path):
    root, _, _ = fleet
    con = warehouse.connect(tmp_path / "a.duckdb")
    identity.claim(con, "a", tmp_path / "a.duckdb")
    with pytest.raises(FleetError, match="holds cluster a's data, not b's"):
        identity.claim(con, "b", tmp_path / "a.duckdb")
    misfiled = tmp_path / "src" / "slurm"
    misfiled.mkdir(parents=True)
    dump = sorted((root / "src" / "b" / "slurm").iterdir())[0]
    shutil.copy(dump, misfiled / dump.name)
    ingest_directory(con, tmp_path / "src", load_options(tmp_path / "src"))
    said = identity.misfiled_sacct(con, "a")
    assert said is not None and dump.name in said and "Cluster=b" in said
    assert identity.misfiled_sacct(con, "b") is None
    con.close()


def test_a_fleet_source_is_a_folder_per_cluster(fleet, tmp_path):
    root, _, _ = fleet
    assert [c.name for c in clusters_in(root / "src")] == list(CLUSTERS)
    with pytest.raises(FleetError, match="one cluster's tree"):
        clusters_in(root / "src" / "a")
    shutil.copytree(root / "src" / "b" / "slurm", tmp_path / "Bad Name" / "slurm")
    with pytest.raises(FleetError, match="not a cluster name"):
        clusters_in(tmp_path)
    result = CliRunner().invoke(main, ["run", "--fleet", str(root / "src"), "--db", str(tmp_path / "w.duckdb")])
    assert result.exit_code == 2 and "leave out --db and --cluster" in result.output


def test_a_run_named_for_a_cluster_fails_on_a_sacct_dump_of_another(fleet, tmp_path):
    root, _, _ = fleet
    shutil.copytree(root / "src" / "b" / "slurm", tmp_path / "src" / "slurm")
    stray = sorted((root / "src" / "a" / "slurm").glob("sacct*"))[0]
    shutil.copy(stray, tmp_path / "src" / "slurm" / f"from-a-{stray.name}")
    result = CliRunner().invoke(main, ["run", "--source", str(tmp_path / "src"), "--cluster", "b", "-q",
                                       "--db", str(tmp_path / "b.duckdb"), "--out", str(tmp_path / "out")])
    assert result.exit_code == 1, result.output
    assert f"from-a-{stray.name} says Cluster=a" in result.output and "goodput forget" in result.output


def test_one_broken_cluster_fails_alone_and_the_fleet_report_keeps_the_others(tmp_path):
    """Degrade, don't die: a cluster whose tree cannot be read fails its own run; the other cluster's run, its
    report and the fleet report are built, and the fleet's exit code says a cluster failed."""
    from analysis.package_files import demo_source
    from pipelines.fleet_runner import run_fleet

    shutil.copytree(demo_source(), tmp_path / "src" / "good")
    (tmp_path / "src" / "broken" / "slurm").mkdir(parents=True)
    (tmp_path / "src" / "broken" / "slurm" / "sacct.txt").write_bytes(b"\xff\xfe not a sacct dump\n")
    result = run_fleet(tmp_path / "src", tmp_path / "db", tmp_path / "out", jobs=1)
    status = {r.cluster: r.status for r in result.runs}
    assert status == {"broken": "failed", "good": "ok"}, result.summary()
    assert result.exit_code == 1 and result.report is not None and not result.problems
    page = result.report.read_text()
    assert "../good/reports/" in page and (tmp_path / "out" / "good" / "exports" / "blocklist.json").is_file()
