-- job_run_inputs (TEMP): what job_runs is built from, one row per started job instance, in the columns job_runs
-- keeps of it (sql/derive/build_job_runs.sql): a later build finds the jobs whose inputs changed by comparing the
-- two (sql/derive/stage_job_run_scope.sql). failure: job_failure_causes.is_failure.
CREATE OR REPLACE TEMP TABLE job_run_inputs AS
SELECT j.job_id, j.instance, j.user_name, j.job_name, j.n_gpus, j.state, j.submit_time, j.start_time, j.end_time,
       coalesce(f.is_failure, FALSE) AS failure
FROM jobs j LEFT JOIN job_failure_causes f USING (job_id, instance) WHERE j.start_time IS NOT NULL;
