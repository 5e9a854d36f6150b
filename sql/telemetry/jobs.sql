-- Job instances telemetry covers: two or more of their hosts have samples at $min_samples or more times
-- within their run. hosts = all the job's nodes (a node without samples is missing data, not healthy);
-- telemetry_from / telemetry_to = the span the samples cover.
WITH samples AS (
    -- one row per host and sample time, whatever the metrics: the join below then reads a tenth of the rows
    -- (measured: 7.6 s -> 0.9 s on 12 M telemetry rows, 2,000 nodes x 330 days)
    SELECT DISTINCT host, time FROM telemetry
    -- cumulative port counters (network/) are differenced elsewhere (analysis/network), not compared as gauges
    WHERE NOT (starts_with(metric, 'node_infiniband_') AND contains(metric, '_total'))
), span AS (
    SELECT min(time) AS first_sample, max(time) AS last_sample FROM samples
), cand AS (
    -- only jobs that ran while some telemetry was sampled: the join then grows with the telemetry, not with
    -- the months of jobs before or after it
    SELECT job_id, instance, start_time, end_time, unnest(nodes) AS host
    FROM jobs, span WHERE len(nodes) >= 2 AND start_time IS NOT NULL AND end_time IS NOT NULL
                      AND start_time <= last_sample AND end_time > first_sample
), per_host AS (
    SELECT c.job_id, c.instance, c.host, count(*) AS n, min(t.time) AS t_min, max(t.time) AS t_max
    FROM cand c JOIN samples t ON t.host = c.host AND t.time >= c.start_time AND t.time < c.end_time
    GROUP BY ALL
)
SELECT j.job_id, j.instance, j.state, j.start_time, j.end_time, list_sort(j.nodes) AS hosts,
       count(*) AS hosts_reporting, min(p.t_min) AS telemetry_from, max(p.t_max) AS telemetry_to
FROM per_host p JOIN jobs j USING (job_id, instance)
WHERE p.n >= $min_samples
GROUP BY j.job_id, j.instance, j.state, j.start_time, j.end_time, j.nodes
HAVING count(*) >= 2
ORDER BY j.start_time, j.job_id, j.instance
