-- Cause co-occurrence within failures that ended by $day (see view cause_cooccurrence).
WITH per_failure AS (
    SELECT DISTINCT job_id, instance, cause FROM failure_attribution
    WHERE rule <> 'no-event' AND severity <> 'info' AND end_time < $day::TIMESTAMP + INTERVAL 1 DAY
), pairs AS (
    SELECT a.cause AS cause_a, b.cause AS cause_b, count(*) AS failures_with_both
    FROM per_failure a JOIN per_failure b USING (job_id, instance) GROUP BY ALL
)
SELECT p.cause_a, p.cause_b, p.failures_with_both, p.failures_with_both / t.n AS share_of_a
FROM pairs p JOIN (SELECT cause, count(*) AS n FROM per_failure GROUP BY cause) t ON t.cause = p.cause_a
ORDER BY cause_a, failures_with_both DESC, cause_b  -- ties in a fixed order: the report reads the same every run
