-- Job instances by final state: count and GPU-hours, with shares.
CREATE OR REPLACE VIEW job_status_breakdown AS
SELECT state, count(*) AS instances, count(*) / sum(count(*)) OVER () AS instance_share,
       sum(n_gpus * coalesce(elapsed_s, 0)) / 3600.0 AS gpu_hours,
       sum(n_gpus * coalesce(elapsed_s, 0)) / nullif(sum(sum(n_gpus * coalesce(elapsed_s, 0))) OVER (), 0) AS gpu_hour_share
FROM jobs GROUP BY state ORDER BY instances DESC;
