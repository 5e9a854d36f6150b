-- Nodes blamed for the most failures, with their incidents and causes.
CREATE OR REPLACE VIEW top_offending_nodes AS
WITH blamed AS (
    SELECT host, count(*) AS failures_blamed, count(DISTINCT cause) AS distinct_causes,
           sum(n_gpus * coalesce(elapsed_s, 0)) / 3600.0 AS gpu_hours_of_failed_jobs
    FROM job_failure_causes WHERE host IS NOT NULL AND infra_failure GROUP BY host
), incidents AS (
    SELECT host, count(*) AS incidents, count(*) FILTER (WHERE drained) AS drains, max(first_event) AS last_incident
    FROM node_incidents GROUP BY host
)
SELECT coalesce(b.host, i.host) AS host, coalesce(failures_blamed, 0) AS failures_blamed, distinct_causes,
       coalesce(gpu_hours_of_failed_jobs, 0) AS gpu_hours_of_failed_jobs, coalesce(incidents, 0) AS incidents, coalesce(drains, 0) AS drains, last_incident
FROM blamed b FULL JOIN incidents i ON i.host = b.host
ORDER BY failures_blamed DESC, incidents DESC, host;
