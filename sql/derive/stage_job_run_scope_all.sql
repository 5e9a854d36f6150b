-- job_run_scope (TEMP): the jobs build_job_runs chains. Here every job: job_runs is built from scratch.
CREATE OR REPLACE TEMP TABLE job_run_scope AS SELECT DISTINCT job_id FROM job_run_inputs;
