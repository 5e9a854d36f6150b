-- Within one failure, which causes fire together: for each pair (a, b), how
-- many failures showed both, and what share of failures showing a also showed
-- b (e.g. the share of PCIe failures that co-occur with a GPU off the bus).
CREATE OR REPLACE VIEW cause_cooccurrence AS
WITH per_failure AS (
    SELECT DISTINCT job_id, instance, cause FROM failure_attribution
    WHERE rule <> 'no-event' AND severity <> 'info'
), pairs AS (
    SELECT a.cause AS cause_a, b.cause AS cause_b, count(*) AS failures_with_both
    FROM per_failure a JOIN per_failure b USING (job_id, instance)
    GROUP BY ALL
)
SELECT p.*, p.failures_with_both / t.n AS share_of_a
FROM pairs p JOIN (SELECT cause, count(*) AS n FROM per_failure GROUP BY cause) t ON t.cause = p.cause_a
ORDER BY cause_a, failures_with_both DESC;
