-- Classified events on the instance's nodes within its attribution window; its own job-log
-- lines from the instance's start (as sql/derive/build_failure_attribution.sql counts them).
SELECT c.host, c.event_time, c.source, c.kind, c.code, c.device, c.rule, c.cause, c.severity, c.message,
       c.file, c.line_no
FROM jobs j, classified_events c
WHERE j.job_id = $job_id AND j.instance = $instance AND j.end_time IS NOT NULL
  AND list_contains(j.nodes, c.host)
  AND CASE WHEN c.job_id IS NULL
           THEN c.event_time BETWEEN j.end_time - to_seconds($before_s) AND j.end_time + to_seconds($after_s)
           ELSE c.job_id = j.job_id AND c.event_time BETWEEN coalesce(j.start_time, j.end_time) - INTERVAL 1 MINUTE
                                                          AND j.end_time + to_seconds($after_s) END
ORDER BY c.severity = 'info', c.host, c.event_time, c.rule, c.file, c.line_no
