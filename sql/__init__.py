"""goodput's DuckDB statements, one .sql file each: package data, read through analysis.package_files.

A folder per stage that runs them, and callers name a statement "<stage>/<name>" (analysis.sql.load), so a
file's callers are found by grepping that name (tests/test_sql_layout.py checks every file has one):

    schema/     the persistent tables, each declared once (below)
    ingest/     reading source files into the raw tables; `goodput check` and `goodput forget`
    derive/     jobs, job-log events, classification, attribution, job runs, node incidents, port counters
    metrics/    ETTR, downtime, failure rates, MTTF, goodput, iteration degradation
    models/     lemon features and scores, the incident model, node actions and exports, the validation plan
    criteria/   benchmark criteria and verdicts
    telemetry/  the telemetry detectors' jobs, alerts and evaluation
    report/     what the report, `goodput why` and the demo's summary show
    ops/        the run's own records: schema digest, fingerprints, marks, withheld steps, data health, daily
                checks, run summaries, diagnostics, the sensor, bench helpers
    fleet/      across clusters: each cluster's warehouse attached read-only, a view per table with its cluster
    alerts/     what SREs watch: the metrics file for Prometheus, the new drains' Alertmanager alerts

The source registry's statements (ingest/insert_raw_rows, ingest/delete_files_rows,
ingest/accounting_check_run) have a line naming {raw_table} that analysis.sql writes once per raw table.

Tables. Every persistent table is declared once:
- schema/warehouse.sql: the tables every warehouse has from its first open (ingest's raw tables, ingested_files,
  the run's records) and the views and macros over them; analysis.warehouse runs it when it changed, so an
  existing warehouse migrates with ALTER ... ADD COLUMN IF NOT EXISTS there.
- schema/<table>.sql: a table that keeps rows from run to run (replaced in part: jobs, node_risk, ...), created
  when a step first needs it: the step that writes it, or reads it before its writer ever ran, runs that file
  first (never a copy of it). Created then, not at open: whether the table exists says whether its step ran.
- a table rebuilt whole is declared by its build, `CREATE OR REPLACE TABLE ... AS SELECT`, and nowhere else;
  builds never declare the tables they read.
A whole-table read (a row count, whether a table exists) goes through analysis.sql.count / table_exists, not a file.
"""
