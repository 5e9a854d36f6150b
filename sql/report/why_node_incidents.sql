-- `goodput why HOST`: its incidents, latest first: cause, the rule and line that decided it, whether an
-- operator's record began it, the drain and ticket (their words).
SELECT i.incident_id, i.first_event, i.last_event, i.events, i.cause, c.label, i.rule, i.severity, i.from_operator,
       i.drained_at, i.returned_at, i.drain_reason, i.ticket_id, i.ticket_component, i.ticket_resolution
FROM node_incidents i LEFT JOIN taxonomy_causes c USING (cause)
WHERE i.host = $host ORDER BY i.first_event DESC LIMIT $n
