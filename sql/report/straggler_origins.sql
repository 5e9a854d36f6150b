-- Straggler episodes begun by $day by verdict (node, job, undetermined): episodes and GPU-hours lost waiting.
SELECT s.origin, count(*) AS episodes, sum(s.cost_seconds * j.n_gpus) / 3600.0 AS gpu_hours
FROM straggler_episodes s JOIN jobs j USING (job_id, instance)
WHERE s.start_time < $day::TIMESTAMP + INTERVAL 1 DAY
GROUP BY s.origin ORDER BY gpu_hours DESC, s.origin
