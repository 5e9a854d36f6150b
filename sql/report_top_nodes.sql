SELECT t.host, t.failures_blamed, t.gpu_hours_of_failed_jobs, t.incidents, t.drains,
       (SELECT string_agg(DISTINCT cause, ', ' ORDER BY cause) FROM job_failure_causes f
        WHERE f.host = t.host AND f.infra_failure) AS causes
FROM top_offending_nodes t WHERE t.failures_blamed > 0 OR t.incidents > 0 LIMIT 15
