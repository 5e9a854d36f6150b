-- `goodput why HOST`: what was logged about it, repeats collapsed into episodes (event_episodes), latest
-- first, info-level noise left out.
SELECT e.first_time, e.last_time, e.events, e.source, e.kind, e.code, e.device, e.rule, e.cause, c.label, e.severity,
       e.message, e.file, e.line_no
FROM event_episodes e LEFT JOIN taxonomy_causes c USING (cause)
WHERE e.host = $host AND e.severity IN ('critical', 'warning') ORDER BY e.first_time DESC LIMIT $n
