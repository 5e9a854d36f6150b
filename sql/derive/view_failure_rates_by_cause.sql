-- Failures (job_failure_causes.is_failure) per primary cause, as rates per 1,000 GPU-hours and per
-- 1,000 node-days of runtime (node-days as in Meta's r: nodes x elapsed).
CREATE OR REPLACE VIEW failure_rates_by_cause AS
WITH runtime AS (SELECT sum(n_gpus * coalesce(elapsed_s, 0)) / 3600.0 AS gpu_hours,
                        sum(n_nodes * coalesce(elapsed_s, 0)) / 86400.0 AS node_days FROM jobs)
SELECT f.cause, any_value(f.domain) AS domain, count(*) AS failures,
       sum(f.n_gpus * coalesce(f.elapsed_s, 0)) / 3600.0 AS gpu_hours_of_failed_jobs,
       count(*) * 1000.0 / nullif(r.gpu_hours, 0) AS per_1000_gpu_hours,
       count(*) * 1000.0 / nullif(r.node_days, 0) AS per_1000_node_days
FROM job_failure_causes f, runtime r
WHERE f.is_failure
GROUP BY f.cause, r.gpu_hours, r.node_days ORDER BY failures DESC;
