-- job_run_ettr_scope (TEMP): the runs build_job_run_ettr and build_run_downtime compute. Here every run: both tables
-- are built from scratch.
CREATE OR REPLACE TEMP TABLE job_run_ettr_scope AS SELECT DISTINCT run_id FROM job_runs;
