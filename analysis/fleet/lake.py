"""The fleet's tables as Parquet for a data lake: ``OUT/table=<table>/cluster=<cluster>/part-0.parquet``.

Hive-partitioned by table and cluster, so Spark, Trino and DuckDB read one table of every cluster with
``cluster`` as a column (DuckDB: ``read_parquet('OUT/table=jobs/*/*.parquet', hive_partitioning = true)``).
A table is written a record batch at a time (memory does not grow with it), into a temporary file renamed
over the last export's, so a reader never sees half a file."""
from __future__ import annotations

import os
from pathlib import Path

import pyarrow.parquet as pq

from analysis import sql
from analysis.fleet.clusters import warehouses_in
from analysis.fleet.views import OWN_NAME, connect, ident

BATCH_ROWS = 100_000
# The run's own bookkeeping: what a rerun skips and why, not data about the cluster.
MACHINERY = {"asset_inputs", "derived_marks", "goodput_schema", "withheld_steps", OWN_NAME}


def export_parquet(db_dir: Path, out: Path, progress=None) -> list[Path]:
    """Write every cluster's base tables (the run's bookkeeping aside) under ``out``; the files written."""
    clusters = list(warehouses_in(db_dir))
    con = connect(db_dir)
    written = []
    try:
        tables = sql.query(con, "fleet/base_tables", {"clusters": clusters})
        template = sql.load("fleet/cluster_table_rows")
        for cluster, table in tables.iter_rows():
            if table in MACHINERY:
                continue
            target = Path(out) / f"table={table}" / f"cluster={cluster}" / "part-0.parquet"
            reader = con.sql(template.format(cluster=ident(cluster), table=ident(table))).to_arrow_reader(BATCH_ROWS)
            _write(reader, target)
            written.append(target)
            if progress:
                progress(f"{cluster}.{table} -> {target}")
    finally:
        con.close()
    return written


def _write(reader, target: Path) -> None:
    target.parent.mkdir(parents=True, exist_ok=True)
    partial = target.with_name(f".{target.name}.{os.getpid()}.tmp")
    try:
        with pq.ParquetWriter(partial, reader.schema) as writer:
            for batch in reader:
                writer.write_batch(batch)
        os.replace(partial, target)
    finally:
        partial.unlink(missing_ok=True)
