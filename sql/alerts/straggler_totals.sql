-- Straggler episodes by origin (node, job, undetermined) and the GPU-seconds their jobs lost waiting for them:
-- the time lost (cost_seconds) x the job's GPUs, as goodput_daily counts it (sql/metrics/build_goodput.sql).
SELECT e.origin, count(*) AS episodes, coalesce(sum(e.cost_seconds * j.n_gpus), 0) AS lost_gpu_seconds
FROM straggler_episodes e LEFT JOIN jobs j ON j.job_id = e.job_id AND j.instance = e.instance
GROUP BY e.origin ORDER BY e.origin
