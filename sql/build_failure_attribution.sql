-- failure_attribution: for each job instance that failed (or was ended with an
-- event in its window), every classified event on one of its nodes in
-- [end - $before_s, end + $after_s], and the primary cause chosen in Aegis'
-- order: critical host-side events, then host-side warnings, then distributed
-- symptoms (NCCL timeouts, resets: blamed on their 1-2 hosts, or on the host
-- they cluster on, else on no host: network or configuration); info events
-- are kept, never blamed.
-- A FAILED instance with nothing to blame is `user`, NODE_FAIL `unattributed`,
-- OUT_OF_MEMORY `oom`.
CREATE OR REPLACE TABLE failure_attribution AS
WITH targets AS (
    SELECT job_id, instance, state, end_time, nodes FROM jobs
    WHERE end_time IS NOT NULL
      AND state IN ('FAILED', 'NODE_FAIL', 'OUT_OF_MEMORY', 'TIMEOUT', 'CANCELLED', 'REQUEUED')
), job_hosts AS (
    SELECT job_id, instance, state, end_time, unnest(nodes) AS host FROM targets
), hits AS (
    SELECT h.job_id, h.instance, h.state, h.end_time, c.host, c.event_time, c.source, c.kind, c.code, c.device,
           c.message, c.rule, c.cause, c.domain, c.severity, c.priority, c.distributed, c.file, c.line_no,
           CASE WHEN c.severity = 'critical' AND NOT c.distributed THEN 1
                WHEN c.severity = 'warning' AND NOT c.distributed THEN 2
                WHEN c.distributed AND c.severity <> 'info' THEN 3 ELSE 9 END AS tier
    FROM job_hosts h JOIN classified_events c
      ON c.host = h.host
     AND c.event_time BETWEEN h.end_time - to_seconds($before_s) AND h.end_time + to_seconds($after_s)
), weighed AS (
    -- distributed symptoms: how many hosts report them, and how strongly each host stands out
    SELECT *, count(*) FILTER (WHERE tier = 3) OVER (PARTITION BY job_id, instance, host) AS host_weight,
              count(DISTINCT host) FILTER (WHERE tier = 3) OVER (PARTITION BY job_id, instance) AS dist_hosts,
              count(*) FILTER (WHERE tier = 3) OVER (PARTITION BY job_id, instance) AS dist_events
    FROM hits
), ranked AS (
    SELECT *, row_number() OVER (
        PARTITION BY job_id, instance
        -- the event's file and line last: ties (same host, time and rule) are broken the same way every run
        ORDER BY tier, CASE WHEN tier = 3 THEN -host_weight END, priority DESC, event_time, host, rule, file, line_no
    ) AS pick,
        -- Aegis: on 1-2 hosts blame them; on many, blame the host the errors cluster on
        -- (at least 1.5x its fair share); otherwise suspect the network or configuration
        tier = 3 AND dist_hosts > 2 AND host_weight < 1.5 * dist_events / dist_hosts AS unclustered
    FROM weighed
), explained AS (
    SELECT job_id, instance, state, end_time, cause, domain,
           CASE WHEN pick = 1 AND unclustered THEN NULL ELSE host END AS host, event_time, source, kind, code, device,
           message, CASE WHEN pick = 1 AND unclustered THEN rule || ' (no clustering host: network or configuration)'
                         ELSE rule END AS rule,
           severity, (pick = 1 AND tier < 9) AS is_primary
    FROM ranked
), defaults AS (
    SELECT t.job_id, t.instance, t.state, t.end_time,
           CASE t.state WHEN 'NODE_FAIL' THEN 'unattributed' WHEN 'OUT_OF_MEMORY' THEN 'oom' ELSE 'user' END AS cause,
           CASE t.state WHEN 'NODE_FAIL' THEN 'infrastructure' ELSE 'user' END AS domain,
           NULL::VARCHAR AS host, NULL::TIMESTAMP AS event_time, NULL::VARCHAR AS source, NULL::VARCHAR AS kind,
           NULL::VARCHAR AS code, NULL::VARCHAR AS device, NULL::VARCHAR AS message, 'no-event' AS rule,
           NULL::VARCHAR AS severity, TRUE AS is_primary
    FROM targets t
    WHERE t.state IN ('FAILED', 'NODE_FAIL', 'OUT_OF_MEMORY')
      AND NOT EXISTS (SELECT 1 FROM explained x WHERE x.job_id = t.job_id AND x.instance = t.instance AND x.is_primary)
)
SELECT * FROM explained UNION ALL BY NAME SELECT * FROM defaults
ORDER BY job_id, instance, is_primary DESC, event_time, host, rule, source, kind, code, device, message;
