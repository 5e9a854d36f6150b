-- Machines Minder confirmed as drifting from their peers in the 30 days up to $day, with the job,
-- the metric, when the drift was first seen and how long confirmation took.
SELECT a.job_id, a.host, a.metric, a.window_start, a.confirmed_at,
       date_diff('second', a.window_start, a.confirmed_at) AS confirm_s, round(a.score, 1) AS score, j.state
FROM machine_alerts a LEFT JOIN telemetry_jobs j ON j.job_id = a.job_id AND j.instance = a.instance
WHERE a.method = 'minder' AND a.confirmed_at < $day::DATE + 1 AND a.confirmed_at >= $day::DATE - 29
ORDER BY a.confirmed_at DESC, a.job_id, a.host
LIMIT 30
