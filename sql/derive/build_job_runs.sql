-- job_runs: job instances chained into logical training runs. Requeued
-- instances share a job id; a new job id continues a run when the same user
-- submits the same job name at the same size after the previous job ended and
-- no later than $gap_s after that end (jobs queued side by side, such as array
-- tasks, are separate runs).
-- failure: the instance is a failure as job_failure_causes.is_failure defines it (a requeue
-- for maintenance or one nothing explains is not). A run is a crash loop when one of its job ids
-- was restarted at least $crash_loop_min times after failures.
-- Staged (TEMP) for the jobs of job_run_scope (every job, or the groups a nightly's changes touched:
-- sql/derive/stage_job_run_scope.sql) from job_run_inputs; store_job_runs / replace_job_runs write job_runs.
CREATE OR REPLACE TEMP TABLE staged_job_runs AS
WITH inst AS (
    SELECT * FROM job_run_inputs WHERE job_id IN (SELECT job_id FROM job_run_scope)
), per_job AS (
    -- who and what from the first instance: requeues may differ (a resized job), any_value would pick at random
    -- failed_restarts: the failures but the last instance (one restart after each)
    SELECT job_id, arg_min(user_name, instance) AS user_name, arg_min(job_name, instance) AS job_name,
           arg_min(n_gpus, instance) AS n_gpus,
           min(submit_time) AS first_submit, min(start_time) AS first_start, max(end_time) AS last_end,
           count(*) FILTER (WHERE failure) - arg_max(failure, instance)::INTEGER AS failed_restarts,
           count(*) AS instances, count(*) FILTER (WHERE failure) AS failures
    FROM inst GROUP BY job_id
), chained AS (
    SELECT *, lag(last_end) OVER w AS prev_end, lag(job_id) OVER w AS prev_job
    FROM per_job WINDOW w AS (PARTITION BY user_name, job_name, n_gpus ORDER BY first_start, job_id)
), marked AS (
    SELECT *, CASE WHEN prev_end IS NOT NULL AND first_submit >= prev_end
                    AND first_submit <= prev_end + to_seconds($gap_s) THEN 0 ELSE 1 END AS starts_run
    FROM chained
), runs AS (
    -- a run is named by its first job: the last job up to here that started one (one sort with the chaining)
    SELECT *, last_value(CASE WHEN starts_run = 1 THEN job_id END IGNORE NULLS) OVER (
        PARTITION BY user_name, job_name, n_gpus ORDER BY first_start, job_id ROWS UNBOUNDED PRECEDING) AS run_id
    FROM marked
), run_totals AS (
    -- per run from its jobs (an aggregate: windows over every instance sorted them once more each)
    SELECT run_id, sum(instances)::BIGINT AS run_instances, count(*) AS run_jobs, sum(failures)::BIGINT AS run_failures,
           max(failed_restarts) >= $crash_loop_min AS crash_loop
    FROM runs GROUP BY run_id
)
SELECT r.run_id,
       row_number() OVER (PARTITION BY r.run_id ORDER BY i.start_time, i.job_id, i.instance)::INTEGER AS run_seq,
       i.job_id, i.instance, i.state, i.failure, i.user_name, i.job_name, i.n_gpus, i.submit_time, i.start_time, i.end_time,
       t.run_instances, t.run_jobs, t.run_failures, t.crash_loop
FROM inst i JOIN runs r USING (job_id) JOIN run_totals t ON t.run_id = r.run_id;
