-- job_runs: every job chained (staged_job_runs over job_run_scope_all), the table replaced.
CREATE OR REPLACE TABLE job_runs AS SELECT * FROM staged_job_runs ORDER BY run_id, run_seq;
DROP TABLE staged_job_runs;
DROP TABLE job_run_scope;
DROP TABLE job_run_inputs;
