-- cluster_failure_rate (Meta §III): failures = jobs over 128 GPUs that ended
-- NODE_FAIL + FAILED jobs with a critical event in their attribution window;
-- divided by node-days of runtime (runtime in days x allocated nodes).
CREATE OR REPLACE TABLE cluster_failure_rate AS
WITH critical AS (
    SELECT DISTINCT job_id, instance FROM failure_attribution WHERE severity = 'critical'
), counted AS (
    SELECT count(*) FILTER (WHERE j.state = 'NODE_FAIL' AND j.n_gpus > 128) AS node_fail_large_jobs,
           count(*) FILTER (WHERE j.state = 'FAILED' AND c.job_id IS NOT NULL) AS failed_with_critical_event,
           sum(j.n_nodes * coalesce(j.elapsed_s, 0)) / 86400.0 AS node_days
    FROM jobs j LEFT JOIN critical c USING (job_id, instance)
    WHERE j.start_time IS NOT NULL
)
SELECT node_fail_large_jobs, failed_with_critical_event, node_fail_large_jobs + failed_with_critical_event AS failures,
       node_days, (node_fail_large_jobs + failed_with_critical_event) / nullif(node_days, 0) AS r_per_node_day,
       1000 * (node_fail_large_jobs + failed_with_critical_event) / nullif(node_days, 0) AS r_per_1000_node_days
FROM counted;
