-- job_run_scope (TEMP): the jobs build_job_runs chains again, when job_runs holds a build of the same statements
-- and settings (analysis/derive/attribution.py): every job of each (user, job name, size) group, as per_job
-- keys it (the first instance's), that holds a changed job, before or after its change. A changed job: its rows
-- in job_run_inputs and in job_runs differ (new, gone, requeued, its state, times or failure changed). Runs never
-- cross a group, so the other groups' rows are those a build over every job gives: a nightly chains the
-- groups its day touched instead of a year of jobs.
CREATE OR REPLACE TEMP TABLE job_run_scope AS
WITH kept AS (
    SELECT job_id, instance, user_name, job_name, n_gpus, state, submit_time, start_time, end_time, failure
    FROM job_runs
), changed AS (
    SELECT job_id FROM (SELECT * FROM job_run_inputs EXCEPT SELECT * FROM kept)
    UNION
    SELECT job_id FROM (SELECT * FROM kept EXCEPT SELECT * FROM job_run_inputs)
), now_keys AS (
    SELECT job_id, arg_min(user_name, instance) AS user_name, arg_min(job_name, instance) AS job_name,
           arg_min(n_gpus, instance) AS n_gpus
    FROM job_run_inputs GROUP BY job_id
), kept_keys AS (
    SELECT job_id, arg_min(user_name, instance) AS user_name, arg_min(job_name, instance) AS job_name,
           arg_min(n_gpus, instance) AS n_gpus
    FROM kept GROUP BY job_id
), groups AS (
    SELECT user_name, job_name, n_gpus FROM now_keys WHERE job_id IN (SELECT job_id FROM changed)
    UNION
    SELECT user_name, job_name, n_gpus FROM kept_keys WHERE job_id IN (SELECT job_id FROM changed)
)
SELECT k.job_id FROM now_keys k JOIN groups g
  ON k.user_name IS NOT DISTINCT FROM g.user_name AND k.job_name IS NOT DISTINCT FROM g.job_name
 AND k.n_gpus IS NOT DISTINCT FROM g.n_gpus
UNION
SELECT k.job_id FROM kept_keys k JOIN groups g
  ON k.user_name IS NOT DISTINCT FROM g.user_name AND k.job_name IS NOT DISTINCT FROM g.job_name
 AND k.n_gpus IS NOT DISTINCT FROM g.n_gpus;
