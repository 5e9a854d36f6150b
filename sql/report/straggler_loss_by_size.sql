-- GPU-hours jobs lost waiting for stragglers (straggler_episodes begun by $day: cost x the job's GPUs) by size
-- class, in the shape of report/loss_by_size.sql.
SELECT size_bucket(j.n_gpus) AS bucket_gpus, 'waiting for stragglers' AS kind,
       sum(s.cost_seconds * j.n_gpus) / 3600.0 AS lost_gpu_hours, count(DISTINCT (s.job_id, s.instance)) AS instances
FROM straggler_episodes s JOIN jobs j USING (job_id, instance)
WHERE s.start_time < $day::TIMESTAMP + INTERVAL 1 DAY
GROUP BY ALL ORDER BY bucket_gpus
