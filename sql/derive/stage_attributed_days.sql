-- attributed_days_now (TEMP): per day, the instances build_failure_attribution judges (their targets, by the day
-- they ended) and the classified events (by their day; NULL: without a time), each with a digest of the columns
-- it reads: compared with attributed_days by attribution_since, stored by store_attributed_days.
CREATE OR REPLACE TEMP TABLE attributed_days_now AS
SELECT 'jobs' AS kind, date_trunc('day', end_time) AS day, count(*) AS n,
       sum(hash(job_id, instance, state, start_time, end_time, nodes))::HUGEINT AS digest
FROM jobs
WHERE end_time IS NOT NULL AND state IN ('FAILED', 'NODE_FAIL', 'OUT_OF_MEMORY', 'TIMEOUT', 'CANCELLED', 'REQUEUED')
GROUP BY ALL
UNION ALL
SELECT 'events', date_trunc('day', event_time), count(*),
       sum(hash(event_time, host, source, kind, code, event_severity, message, device, reporter, file, line_no, job_id,
                peer, rule, cause, domain, severity, transient, priority, distributed))::HUGEINT
FROM classified_events GROUP BY ALL;
