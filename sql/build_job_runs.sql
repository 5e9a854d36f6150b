-- job_runs: job instances chained into logical training runs. Requeued
-- instances share a job id; a new job id continues a run when the same user
-- submits the same job name at the same size after the previous job ended and
-- no later than $gap_s after that end (jobs queued side by side, such as array
-- tasks, are separate runs).
-- failure: the instance is a failure as job_failure_causes.is_failure defines it (a requeue
-- for maintenance or one nothing explains is not). A run is a crash loop when one of its job ids
-- was restarted at least $crash_loop_min times after failures.
CREATE OR REPLACE TABLE job_runs AS
WITH inst AS (
    SELECT j.job_id, j.instance, j.user_name, j.job_name, j.n_gpus, j.state, j.submit_time, j.start_time, j.end_time,
           coalesce(f.is_failure, FALSE) AS failure, max(j.instance) OVER (PARTITION BY j.job_id) AS last_instance
    FROM jobs j LEFT JOIN job_failure_causes f USING (job_id, instance) WHERE j.start_time IS NOT NULL
), per_job AS (
    -- who and what from the first instance: requeues may differ (a resized job), any_value would pick at random
    SELECT job_id, arg_min(user_name, instance) AS user_name, arg_min(job_name, instance) AS job_name,
           arg_min(n_gpus, instance) AS n_gpus,
           min(submit_time) AS first_submit, min(start_time) AS first_start, max(end_time) AS last_end,
           count(*) FILTER (WHERE failure AND instance < last_instance) AS failed_restarts
    FROM inst GROUP BY job_id
), chained AS (
    SELECT *, lag(last_end) OVER w AS prev_end, lag(job_id) OVER w AS prev_job
    FROM per_job WINDOW w AS (PARTITION BY user_name, job_name, n_gpus ORDER BY first_start, job_id)
), marked AS (
    SELECT *, CASE WHEN prev_end IS NOT NULL AND first_submit >= prev_end
                    AND first_submit <= prev_end + to_seconds($gap_s) THEN 0 ELSE 1 END AS starts_run
    FROM chained
), numbered AS (
    SELECT *, sum(starts_run) OVER (PARTITION BY user_name, job_name, n_gpus ORDER BY first_start, job_id
                                    ROWS UNBOUNDED PRECEDING) AS run_no
    FROM marked
), runs AS (
    SELECT *, first_value(job_id) OVER (PARTITION BY user_name, job_name, n_gpus, run_no ORDER BY first_start, job_id) AS run_id
    FROM numbered
)
SELECT r.run_id,
       row_number() OVER (PARTITION BY r.run_id ORDER BY i.start_time, i.job_id, i.instance)::INTEGER AS run_seq,
       i.job_id, i.instance, i.state, i.failure, i.user_name, i.job_name, i.n_gpus, i.submit_time, i.start_time, i.end_time,
       count(*) OVER (PARTITION BY r.run_id) AS run_instances,
       count(DISTINCT i.job_id) OVER (PARTITION BY r.run_id) AS run_jobs,
       count(*) FILTER (WHERE i.failure) OVER (PARTITION BY r.run_id) AS run_failures,
       max(r.failed_restarts) OVER (PARTITION BY r.run_id) >= $crash_loop_min AS crash_loop
FROM inst i JOIN runs r USING (job_id)
ORDER BY r.run_id, run_seq;
