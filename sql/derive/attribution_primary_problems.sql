-- Failed instances without exactly one primary cause (should be none).
SELECT count(*) FROM (
    SELECT j.job_id, j.instance, count(a.job_id) FILTER (WHERE a.is_primary) AS primaries
    FROM jobs j LEFT JOIN failure_attribution a USING (job_id, instance)
    WHERE j.state IN ('FAILED', 'NODE_FAIL', 'OUT_OF_MEMORY') AND j.end_time IS NOT NULL
    GROUP BY ALL)
WHERE primaries <> 1
