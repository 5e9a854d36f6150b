-- Nodes that failed the latest validation run (the run with the latest time) and why: their failing metrics.
WITH latest AS (
    SELECT run_id FROM benchmark_verdicts ORDER BY run_time DESC, run_id DESC LIMIT 1
)
SELECT v.run_id, v.host, count(*) AS failing_metrics,
       list(v.benchmark || '/' || v.metric || coalesce(': ' || v.reason, '') ORDER BY v.similarity NULLS FIRST, v.benchmark, v.metric)[1:3] AS worst
FROM benchmark_verdicts v JOIN latest USING (run_id)
WHERE v.verdict = 'fail'
GROUP BY v.run_id, v.host
ORDER BY failing_metrics DESC, v.host
