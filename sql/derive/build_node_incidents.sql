-- node_incidents: critical and warning host-side events on a node, grouped into one
-- incident while they follow each other within $gap_s; with the drain that
-- took the node out (a DRAIN/DOWN period starting within 6 h), when it came
-- back, and the repair ticket opened for it (within 2 days).
-- An operator's record (a drain/down reason or a repair ticket the reason rules classified) is an
-- incident of its own when no machine line explains it: nothing on the node in the 6 h before a drain
-- (2 days before a ticket, where a drain explains it too). That is how a node whose faults only Slurm or the tickets recorded has a
-- history; one that the kernel or a health check saw first keeps that event as its cause, and the drain
-- and ticket attach to it as before. from_operator: the incident began with such a record.
CREATE OR REPLACE TABLE node_incidents AS
WITH graded AS (
    SELECT * FROM classified_events
    WHERE severity IN ('critical', 'warning') AND domain <> 'user'  -- OOMs and segfaults are the job's
      -- a collective's symptom (a timeout, a transport error) is reported on every host of the job:
      -- not an incident of the host that printed it (attribution decides whose it is)
      AND NOT distributed
), lone AS (
    SELECT o.* FROM graded o
    WHERE o.source IN ('slurm', 'ticket') AND NOT EXISTS (
        -- a machine line explains a drain or a ticket; a drain explains the ticket opened after it (another
        -- drain does not explain a drain: each time Slurm took the node out is an interruption)
        SELECT 1 FROM graded g
        WHERE g.host = o.host AND (g.file, g.line_no) <> (o.file, o.line_no)
          AND g.event_time >= o.event_time - CASE WHEN o.source = 'ticket' THEN INTERVAL 2 DAY ELSE INTERVAL 6 HOUR END
          AND ((g.source NOT IN ('slurm', 'ticket') AND g.event_time <= o.event_time + INTERVAL 10 MINUTE)
               OR (o.source = 'ticket' AND g.source = 'slurm' AND g.event_time <= o.event_time)))
), ev AS (
    SELECT *, false AS operator_record FROM graded WHERE source NOT IN ('slurm', 'ticket')
    UNION ALL
    SELECT *, true AS operator_record FROM lone
), gaps AS (
    SELECT *, CASE WHEN lag(event_time) OVER w IS NULL
                     OR event_time > lag(event_time) OVER w + to_seconds($gap_s) THEN 1 ELSE 0 END AS new_incident
    FROM ev WINDOW w AS (PARTITION BY host ORDER BY event_time, file, line_no)
), numbered AS (
    SELECT *, sum(new_incident) OVER (PARTITION BY host ORDER BY event_time, file, line_no ROWS UNBOUNDED PRECEDING) AS n
    FROM gaps
), incidents AS (
    SELECT host, n, min(event_time) AS first_event, max(event_time) AS last_event, count(*) AS events,
           -- the highest-priority event, the earliest of equals: cause and rule from the same event
           first(cause ORDER BY priority DESC, event_time, file, line_no) AS cause,
           first(rule ORDER BY priority DESC, event_time, file, line_no) AS rule,
           CASE WHEN bool_or(severity = 'critical') THEN 'critical' ELSE 'warning' END AS severity,
           bool_and(transient) AS transient, list(DISTINCT cause ORDER BY cause) AS causes,
           first(operator_record ORDER BY event_time, file, line_no) AS from_operator
    FROM numbered GROUP BY host, n
), drains AS (
    SELECT host, time_start, time_end, state, reason FROM node_states
    WHERE (state LIKE '%DRAIN%' OR state LIKE 'DOWN%' OR state LIKE '%FAIL%') AND coalesce(reason, '') NOT ILIKE 'maintenance%'
    -- the ASOF joins take one row per start: of two starting together, always the same one
    QUALIFY row_number() OVER (PARTITION BY host, time_start ORDER BY file, line_no) = 1
), with_drain AS (
    SELECT i.*, d.time_start AS d_start, d.time_end AS d_end, d.state AS d_state, d.reason AS d_reason
    FROM incidents i ASOF LEFT JOIN drains d ON d.host = i.host AND d.time_start >= i.first_event - INTERVAL 5 MINUTE
), with_ticket AS (
    SELECT w.*, t.ticket_id, t.opened, t.component, t.resolution
    FROM with_drain w ASOF LEFT JOIN (
        SELECT * FROM tickets QUALIFY row_number() OVER (PARTITION BY host, opened ORDER BY file, line_no) = 1
    ) t ON t.host = w.host AND t.opened >= w.first_event - INTERVAL 1 HOUR
)
SELECT host || '#' || n AS incident_id, host, first_event, last_event, events, cause, rule, severity, transient, causes,
       from_operator,
       (d_start IS NOT NULL AND d_start <= first_event + INTERVAL 6 HOUR) AS drained,
       CASE WHEN d_start <= first_event + INTERVAL 6 HOUR THEN d_start END AS drained_at,
       CASE WHEN d_start <= first_event + INTERVAL 6 HOUR THEN d_end END AS returned_at,
       CASE WHEN d_start <= first_event + INTERVAL 6 HOUR THEN d_reason END AS drain_reason,
       CASE WHEN opened <= first_event + INTERVAL 2 DAY THEN ticket_id END AS ticket_id,
       CASE WHEN opened <= first_event + INTERVAL 2 DAY THEN component END AS ticket_component,
       CASE WHEN opened <= first_event + INTERVAL 2 DAY THEN resolution END AS ticket_resolution
FROM with_ticket
ORDER BY host, first_event;
