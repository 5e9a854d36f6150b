-- Job instances that ended by $day, by final state: count and GPU-hours, with shares.
SELECT state, count(*) AS instances, count(*) / sum(count(*)) OVER () AS instance_share,
       sum(n_gpus * coalesce(elapsed_s, 0)) / 3600.0 AS gpu_hours,
       sum(n_gpus * coalesce(elapsed_s, 0)) / nullif(sum(sum(n_gpus * coalesce(elapsed_s, 0))) OVER (), 0) AS gpu_hour_share
FROM jobs WHERE end_time IS NULL OR end_time < $day::TIMESTAMP + INTERVAL 1 DAY
GROUP BY state ORDER BY instances DESC
