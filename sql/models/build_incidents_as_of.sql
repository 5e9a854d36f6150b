-- incidents_as_of: node_incidents as they were known at $as_of, for the node
-- models (TEMP, this connection only). An incident still going on at $as_of
-- keeps only its events before it: its cause, severity and last event come
-- from those, and a drain, return to service or ticket dated later is unknown.
-- Later events only ever extend the last incident of a node, so the incidents
-- themselves are the same ones.
CREATE OR REPLACE TEMP TABLE incidents_as_of AS
WITH known AS (
    -- node_incidents attaches the next drain (6 h) and ticket (2 days) to every incident
    -- before them; here each belongs to the latest incident before it only, so one drain
    -- is not counted as several drained incidents
    SELECT * REPLACE (
        CASE WHEN drained_at IS NULL OR row_number() OVER (PARTITION BY host, drained_at ORDER BY first_event DESC) = 1
             THEN drained_at END AS drained_at,
        CASE WHEN drained_at IS NULL OR row_number() OVER (PARTITION BY host, drained_at ORDER BY first_event DESC) = 1
             THEN returned_at END AS returned_at,
        CASE WHEN ticket_id IS NULL OR row_number() OVER (PARTITION BY host, ticket_id ORDER BY first_event DESC) = 1
             THEN ticket_id END AS ticket_id,
        CASE WHEN ticket_id IS NULL OR row_number() OVER (PARTITION BY host, ticket_id ORDER BY first_event DESC) = 1
             THEN ticket_component END AS ticket_component)
    FROM node_incidents WHERE first_event < $as_of
), ev AS (
    SELECT k.incident_id, e.event_time, e.cause, e.severity, e.transient, e.priority, e.file, e.line_no
    FROM known k JOIN classified_events e
      ON e.host = k.host AND e.event_time >= k.first_event AND e.event_time <= k.last_event AND e.event_time < $as_of
    WHERE e.severity IN ('critical', 'warning') AND e.domain <> 'user' AND NOT e.distributed
      -- an operator's record counts where it began the incident (node_incidents.from_operator), not beside a machine line
      AND (e.source NOT IN ('slurm', 'ticket') OR k.from_operator)
), agg AS (
    SELECT incident_id, max(event_time) AS last_event, count(*) AS events,
           first(cause ORDER BY priority DESC, event_time, file, line_no) AS cause,
           CASE WHEN bool_or(severity = 'critical') THEN 'critical' ELSE 'warning' END AS severity,
           bool_and(transient) AS transient, list(DISTINCT cause ORDER BY cause) AS causes
    FROM ev GROUP BY incident_id
)
SELECT k.incident_id, k.host, k.first_event, a.last_event, a.events, a.cause, a.severity, a.transient, a.causes,
       coalesce(k.drained_at < $as_of, false) AS drained,
       CASE WHEN k.drained_at < $as_of THEN k.drained_at END AS drained_at,
       CASE WHEN k.returned_at < $as_of THEN k.returned_at END AS returned_at,
       CASE WHEN t.opened < $as_of THEN k.ticket_id END AS ticket_id,
       CASE WHEN t.opened < $as_of THEN k.ticket_component END AS ticket_component
FROM known k JOIN agg a USING (incident_id)
LEFT JOIN (SELECT ticket_id, min(opened) AS opened FROM tickets GROUP BY ticket_id) t USING (ticket_id)
