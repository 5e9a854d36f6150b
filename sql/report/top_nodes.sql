-- The nodes that cost the most: GPU-hours of work lost in the infrastructure failures blamed on them (up to
-- $day), then incidents; with their state at the end of $day (drained or down, and why), their causes and the one
-- that cost most.
WITH by_cause AS (
    SELECT a.host, a.cause, sum(l.lost_gpu_hours) AS lost FROM goodput_losses l
    JOIN job_failure_causes a USING (job_id, instance)
    WHERE a.host IS NOT NULL AND l.infra AND l.end_time < $day::TIMESTAMP + INTERVAL 1 DAY GROUP BY a.host, a.cause
), lost AS (
    -- top_cause: the cause that carries most of the node's loss (the headline names it)
    SELECT host, sum(lost) AS lost_gpu_hours, arg_max(cause, lost) AS top_cause FROM by_cause GROUP BY host
), state AS (
    SELECT host, state || coalesce(': ' || reason, '') AS state FROM nodes_out_of_service($day)
)
SELECT t.host, coalesce(l.lost_gpu_hours, 0) AS lost_gpu_hours, l.top_cause, t.failures_blamed, t.incidents, t.drains,
       coalesce(s.state, 'in service') AS state_now,
       (SELECT string_agg(DISTINCT cause, ', ' ORDER BY cause) FROM job_failure_causes f
        WHERE f.host = t.host AND f.infra_failure) AS causes
FROM top_offending_nodes t LEFT JOIN lost l USING (host) LEFT JOIN state s USING (host)
WHERE t.failures_blamed > 0 OR t.incidents > 0
ORDER BY lost_gpu_hours DESC, t.incidents DESC, t.host LIMIT 15
