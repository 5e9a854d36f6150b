-- The largest floods of one event (event_episodes: the same rule on the same host, source, kind, code and device,
-- repeats within 30 minutes) of $min_events repeats or more that began by the end of $day, the largest $limit;
-- floods and flood_events: all of them, before the limit. The first line is cut to 300 characters.
SELECT e.host, e.source, e.kind, e.code, e.device, e.rule, e.cause, coalesce(c.label, e.cause) AS label, e.severity,
       e.events, e.first_time, e.last_time, left(e.message, 300) AS message, e.file, e.line_no,
       count(*) OVER () AS floods, (sum(e.events) OVER ())::BIGINT AS flood_events
FROM event_episodes e LEFT JOIN taxonomy_causes c USING (cause)
WHERE e.events >= $min_events AND e.first_time < $day::TIMESTAMP + INTERVAL 1 DAY
ORDER BY e.events DESC, e.first_time, e.host
LIMIT $limit
