-- The nodes stragglers cost the most (straggler_episodes begun by $day), but for the stragglers that moved with
-- their job: jobs and episodes, GPU-hours the jobs lost waiting, the median slowdown, and the verdict (node:
-- straggled in several jobs beyond chance, or slowed during a run).
SELECT s.host, count(DISTINCT s.job_id) AS jobs, count(*) AS episodes,
       sum(s.cost_seconds * j.n_gpus) / 3600.0 AS gpu_hours, median(s.slowdown) AS slowdown,
       bool_or(s.basis = 'repeat') AS repeat, count(*) FILTER (WHERE s.origin = 'node') AS node_episodes,
       any_value(s.why ORDER BY s.basis = 'repeat' DESC, s.cost_seconds DESC) AS why
FROM straggler_episodes s JOIN jobs j USING (job_id, instance)
WHERE s.start_time < $day::TIMESTAMP + INTERVAL 1 DAY AND s.origin <> 'job'
GROUP BY s.host ORDER BY gpu_hours DESC, s.host LIMIT $limit
