-- goodput_daily: capacity (each node seen x its GPUs x 24 h), GPU-hours scheduled,
-- and lost: a failed or preempted instance loses min(runtime, Δt/2) x GPUs
-- (work since the last checkpoint, on average), counted on the day it ended. Failures are
-- job_failure_causes.is_failure (a requeue for maintenance is not one); bucket_gpus is the
-- report's one job-size bucket (size_bucket, sql/schema/warehouse.sql).
-- Stragglers (straggler_episodes): the training time a job lost waiting for a slow worker x its GPUs, spread
-- over the days each episode spans, is lost too (lost_straggler_gpu_hours), though the job did not fail.
-- goodput = productive GPU-hours / capacity. goodput_loss splits the losses by
-- cause (preemptions as `preempted` / `preempted_second_order`) and job size.
CREATE OR REPLACE TABLE goodput_losses AS
SELECT j.job_id, j.instance, j.end_time, j.n_gpus,
       size_bucket(j.n_gpus) AS bucket_gpus,
       CASE WHEN j.state = 'PREEMPTED' THEN CASE WHEN s.job_id IS NOT NULL THEN 'preempted_second_order' ELSE 'preempted' END
            ELSE a.cause END AS cause,
       j.state <> 'PREEMPTED' AND coalesce(a.infra_failure, FALSE) AS infra,
       least(j.elapsed_s, $dt_s / 2) * j.n_gpus / 3600.0 AS lost_gpu_hours
FROM jobs j
LEFT JOIN job_failure_causes a ON a.job_id = j.job_id AND a.instance = j.instance
LEFT JOIN second_order_preemptions s ON s.job_id = j.job_id AND s.instance = j.instance
WHERE j.end_time IS NOT NULL AND j.start_time IS NOT NULL
  AND (j.state = 'PREEMPTED' OR coalesce(a.is_failure, FALSE));
CREATE OR REPLACE TABLE goodput_daily AS
WITH capacity AS (
    SELECT (sum(gpus) * 24)::DOUBLE AS gpu_hours FROM node_gpus
), days AS (
    SELECT day FROM job_days
), spans AS (
    -- jobs still running at the end of the data count until then
    SELECT n_gpus, start_time, coalesce(end_time, (SELECT max(end_time) FROM jobs)) AS until
    FROM jobs WHERE start_time IS NOT NULL
), scheduled AS (
    -- each job on the days its span touches (start < day + 1 day and until > day), one row each: a join of
    -- every day with every job by those two inequalities grew with the square of the history
    SELECT d.day, sum(j.n_gpus * (epoch(least(j.until, d.day + INTERVAL 1 DAY)) - epoch(greatest(j.start_time, d.day)))) / 3600.0 AS gpu_hours
    FROM (SELECT *, unnest(generate_series(date_trunc('day', start_time), date_trunc('day', until - INTERVAL 1 MICROSECOND),
                                           INTERVAL 1 DAY)) AS on_day FROM spans) j
    JOIN days d ON d.day = j.on_day
    GROUP BY d.day
), lost AS (
    -- rounded to a microsecond-GPU-hour: a float sum depends on the order rows arrive in, the answer must not
    SELECT date_trunc('day', end_time) AS day,
           round(sum(lost_gpu_hours) FILTER (WHERE cause NOT LIKE 'preempted%'), 6) AS failures,
           round(sum(lost_gpu_hours) FILTER (WHERE infra), 6) AS infra_failures,
           round(sum(lost_gpu_hours) FILTER (WHERE cause LIKE 'preempted%'), 6) AS preemptions,
           round(sum(lost_gpu_hours) FILTER (WHERE cause = 'preempted_second_order'), 6) AS second_order
    FROM goodput_losses GROUP BY ALL
), straggled AS (
    SELECT d.day, round(sum(e.cost_seconds * j.n_gpus / 3600.0
                            * date_diff('microsecond', greatest(e.start_time, d.day), least(e.end_time, d.day + INTERVAL 1 DAY))
                            / greatest(date_diff('microsecond', e.start_time, e.end_time), 1)), 6) AS gpu_hours
    FROM days d JOIN straggler_episodes e ON e.start_time < d.day + INTERVAL 1 DAY AND e.end_time > d.day
    JOIN jobs j ON j.job_id = e.job_id AND j.instance = e.instance
    GROUP BY d.day
)
SELECT d.day, c.gpu_hours AS capacity_gpu_hours, coalesce(s.gpu_hours, 0) AS scheduled_gpu_hours,
       coalesce(l.failures, 0) AS lost_failure_gpu_hours, coalesce(l.infra_failures, 0) AS lost_infra_failure_gpu_hours,
       coalesce(l.preemptions, 0) AS lost_preemption_gpu_hours,
       coalesce(l.second_order, 0) AS lost_second_order_gpu_hours,
       coalesce(g.gpu_hours, 0) AS lost_straggler_gpu_hours,
       coalesce(s.gpu_hours, 0) - coalesce(l.failures, 0) - coalesce(l.preemptions, 0) - coalesce(g.gpu_hours, 0)
           AS productive_gpu_hours,
       (coalesce(s.gpu_hours, 0) - coalesce(l.failures, 0) - coalesce(l.preemptions, 0) - coalesce(g.gpu_hours, 0))
           / c.gpu_hours AS goodput
FROM days d CROSS JOIN capacity c LEFT JOIN scheduled s ON s.day = d.day LEFT JOIN lost l ON l.day = d.day
LEFT JOIN straggled g ON g.day = d.day
ORDER BY d.day;
CREATE OR REPLACE VIEW goodput_loss AS
SELECT cause, bucket_gpus, count(*) AS instances, sum(lost_gpu_hours) AS lost_gpu_hours,
       sum(lost_gpu_hours) / sum(sum(lost_gpu_hours)) OVER () AS share_of_loss
FROM goodput_losses GROUP BY ALL ORDER BY lost_gpu_hours DESC;
CREATE OR REPLACE VIEW crash_loop_preemptions AS
SELECT r.run_id, r.job_id, any_value(r.run_failures) AS run_failures,
       (SELECT count(*) FROM second_order_preemptions s WHERE s.by_job_id = r.job_id) AS preemptions_caused
FROM job_runs r WHERE r.crash_loop GROUP BY r.run_id, r.job_id ORDER BY preemptions_caused DESC;
