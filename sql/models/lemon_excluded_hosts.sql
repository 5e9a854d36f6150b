-- Hosts that Kubernetes jobs excluded (jobs.excluded_hosts: a hostname NotIn in their pods' required node affinity),
-- one row per (job, host), for the jobs first submitted at or after $since (NULL: all), as
-- lemon_exclude_expressions.sql gives Slurm's after their hostlists are expanded.
SELECT job_id, min(submit_time) AS submit_time, host
FROM (SELECT job_id, submit_time, unnest(excluded_hosts) AS host FROM jobs WHERE excluded_hosts IS NOT NULL)
GROUP BY job_id, host
HAVING min(submit_time) IS NOT NULL AND ($since IS NULL OR min(submit_time) >= $since)
