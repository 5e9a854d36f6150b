-- The report's stragglers up to the end of $day (straggler_episodes): the costliest episodes, each with its job's
-- size and the GPU-hours the job lost waiting (cost x its GPUs), and the totals over every episode.
WITH e AS (
    SELECT s.*, j.n_gpus, s.cost_seconds * j.n_gpus / 3600.0 AS gpu_hours
    FROM straggler_episodes s JOIN jobs j USING (job_id, instance)
    WHERE s.start_time < $day::TIMESTAMP + INTERVAL 1 DAY
)
SELECT job_id, instance, host, ranks, start_time, end_time, slowdown, kind, origin, why, source, n_gpus,
       cost_seconds, gpu_hours, count(*) OVER () AS episodes, sum(gpu_hours) OVER () AS all_gpu_hours,
       count(DISTINCT host) OVER () AS hosts
FROM e ORDER BY gpu_hours DESC, start_time, host LIMIT $limit
