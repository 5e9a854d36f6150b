-- The failed instances (ended by $day) that ran the most GPU-hours; job names are user text,
-- escaped by the template.
SELECT f.job_id, f.instance, f.job_name, f.user_name, f.n_gpus, f.state, f.cause, f.domain, f.host,
       f.n_gpus * coalesce(f.elapsed_s, 0) / 3600.0 AS gpu_hours
FROM job_failure_causes f WHERE f.end_time < $day::TIMESTAMP + INTERVAL 1 DAY
ORDER BY gpu_hours DESC, f.job_id LIMIT 12
