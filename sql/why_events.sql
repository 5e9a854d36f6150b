-- Classified events on the instance's nodes within its attribution window.
SELECT c.host, c.event_time, c.source, c.kind, c.code, c.device, c.rule, c.cause, c.severity, c.message
FROM jobs j, classified_events c
WHERE j.job_id = $job_id AND j.instance = $instance AND j.end_time IS NOT NULL
  AND list_contains(j.nodes, c.host)
  AND c.event_time BETWEEN j.end_time - to_seconds($before_s) AND j.end_time + to_seconds($after_s)
ORDER BY c.host, c.event_time, c.rule
