-- Meta's r (§III; docs/methods.md#cluster-failure-rate-r), the one definition the report's cards and charts, MTTF's
-- projection and `goodput ettr --from-db` use: failures = jobs over 128 GPUs that ended NODE_FAIL
-- + FAILED jobs with a critical event in their attribution window, by the end of `day`; divided by
-- the node-days of runtime up to then (allocated nodes x runtime, a job still running counted
-- until the end of `day`). failure_rate_as_of(day) gives it as of any day (the report's);
-- cluster_failure_rate holds it as of the last day a job ended (`goodput run`'s report day).
CREATE OR REPLACE MACRO failure_rate_as_of(day) AS TABLE
WITH critical AS (
    SELECT DISTINCT job_id, instance FROM failure_attribution WHERE severity = 'critical'
), upto AS (
    SELECT coalesce(day::TIMESTAMP + INTERVAL 1 DAY, 'infinity'::TIMESTAMP) AS t
), counted AS (
    SELECT count(*) FILTER (WHERE j.state = 'NODE_FAIL' AND j.n_gpus > 128 AND j.end_time < u.t) AS node_fail_large_jobs,
           count(*) FILTER (WHERE j.state = 'FAILED' AND c.job_id IS NOT NULL AND j.end_time < u.t) AS failed_with_critical_event,
           sum(j.n_nodes * greatest(least(coalesce(j.elapsed_s, 0), epoch(u.t) - epoch(j.start_time)), 0)) / 86400.0 AS node_days
    FROM jobs j CROSS JOIN upto u LEFT JOIN critical c USING (job_id, instance)
    WHERE j.start_time IS NOT NULL AND j.start_time < u.t
)
SELECT node_fail_large_jobs, failed_with_critical_event, node_fail_large_jobs + failed_with_critical_event AS failures,
       node_days, (node_fail_large_jobs + failed_with_critical_event) / nullif(node_days, 0) AS r_per_node_day,
       1000 * (node_fail_large_jobs + failed_with_critical_event) / nullif(node_days, 0) AS r_per_1000_node_days
FROM counted;
CREATE OR REPLACE TABLE cluster_failure_rate AS
SELECT (SELECT max(end_time)::DATE FROM jobs) AS as_of, *
FROM failure_rate_as_of((SELECT max(end_time)::DATE FROM jobs));
