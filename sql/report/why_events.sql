-- Classified events on the instance's nodes within its attribution window; its own job-log
-- lines from the instance's start (as sql/derive/build_failure_attribution.sql counts them).
-- Repeats of the same event (the same rule on the same host, source, kind, code and device: an XID flood)
-- are one row: its first line, how many (repeats) and the last one's time.
WITH hits AS (
    SELECT c.host, c.event_time, c.source, c.kind, c.code, c.device, c.rule, c.cause, c.severity, c.message,
           c.file, c.line_no
    FROM jobs j, classified_events c
    WHERE j.job_id = $job_id AND j.instance = $instance AND j.end_time IS NOT NULL
      AND list_contains(j.nodes, c.host)
      AND CASE WHEN c.job_id IS NULL
               THEN c.event_time BETWEEN j.end_time - to_seconds($before_s) AND j.end_time + to_seconds($after_s)
               ELSE c.job_id = j.job_id AND c.event_time BETWEEN coalesce(j.start_time, j.end_time) - INTERVAL 1 MINUTE
                                                              AND j.end_time + to_seconds($after_s) END
)
SELECT host, min(event_time) AS event_time, source, kind, code, device, rule, any_value(cause) AS cause,
       any_value(severity) AS severity, first(message ORDER BY event_time, file, line_no) AS message,
       first(file ORDER BY event_time, file, line_no) AS file, first(line_no ORDER BY event_time, file, line_no) AS line_no,
       count(*) AS repeats, max(event_time) AS last_time
FROM hits
GROUP BY host, source, kind, code, device, rule
ORDER BY any_value(severity) = 'info', host, min(event_time), rule, first(file ORDER BY event_time, file, line_no),
         first(line_no ORDER BY event_time, file, line_no)
