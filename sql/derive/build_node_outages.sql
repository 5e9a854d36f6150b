-- node_outages: each time a node was out of service (Slurm DOWN, DRAIN, FAIL, MAINT or REBOOT states,
-- overlapping or back-to-back periods merged: a drained node that then goes down is one outage), with
-- its cause. The cause: planned work when the reason says so (reason-planned-maintenance); else what
-- the machine saw (the node_incidents row whose drain began it); else the operator's reason as the reason
-- rules classified it; else unattributed. still_out: no end recorded (counted to the end of the data).
CREATE OR REPLACE TABLE node_outages AS
WITH span AS (
    SELECT min(first_time) AS data_start, max(last_time) AS data_end FROM source_spans
), periods AS (
    SELECT p.host, p.time_start, p.time_end, p.state, p.reason, p.file, p.line_no,
           coalesce(p.time_end, greatest(s.data_end, p.time_start)) AS until
    FROM node_states p, span s
    WHERE p.host IS NOT NULL AND p.time_start IS NOT NULL
      AND regexp_matches(p.state, '(^|\+)(DOWN|DRAIN|DRAINED|DRAINING|FAIL|FAILING|MAINT|REBOOT\w*)[*~#!%$@^-]*($|\+)')
), islands AS (
    SELECT *, sum(new_outage) OVER (PARTITION BY host ORDER BY time_start, file, line_no ROWS UNBOUNDED PRECEDING) AS n
    FROM (SELECT *, CASE WHEN time_start > max(until) OVER (PARTITION BY host ORDER BY time_start, file, line_no
                                                             ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING)
                         THEN 1 WHEN row_number() OVER (PARTITION BY host ORDER BY time_start, file, line_no) = 1 THEN 1
                         ELSE 0 END AS new_outage
          FROM periods)
), outages AS (
    SELECT host, n, min(time_start) AS time_start, max(until) AS until, bool_or(time_end IS NULL) AS still_out,
           first(state ORDER BY time_start, file, line_no) AS state,
           first(reason ORDER BY reason IS NULL, time_start, file, line_no) AS reason,
           count(*) AS periods, list(file || ':' || line_no ORDER BY time_start, file, line_no)[1] AS first_record
    FROM islands GROUP BY host, n
), reason_class AS (
    -- the reason as the reason rules read it: the classified Slurm event of a period of the outage
    SELECT o.host, o.n, first(c.cause ORDER BY c.event_time, c.file, c.line_no) AS reason_cause,
           first(c.rule ORDER BY c.event_time, c.file, c.line_no) AS reason_rule
    FROM outages o JOIN classified_events c
      ON c.host = o.host AND c.source = 'slurm' AND c.event_time >= o.time_start
     AND (c.event_time < o.until OR c.event_time = o.time_start)  -- an outage may start and end in the same second
     AND c.rule LIKE 'reason-%'
    GROUP BY o.host, o.n
), incident AS (
    SELECT o.host, o.n, first(i.incident_id ORDER BY i.first_event) AS incident_id,
           first(i.cause ORDER BY i.first_event) AS incident_cause,
           first(i.ticket_id ORDER BY i.first_event) FILTER (WHERE i.ticket_id IS NOT NULL) AS ticket_id
    FROM outages o JOIN node_incidents i
      ON i.host = o.host AND i.drained_at >= o.time_start AND (i.drained_at < o.until OR i.drained_at = o.time_start)
    GROUP BY o.host, o.n
), caused AS (
    SELECT o.*, r.reason_rule, r.reason_cause, i.incident_id, i.ticket_id,
           CASE WHEN coalesce(rc.planned, false) THEN r.reason_cause
                ELSE coalesce(i.incident_cause, r.reason_cause, 'unattributed') END AS cause
    FROM outages o
    LEFT JOIN reason_class r USING (host, n)
    LEFT JOIN incident i USING (host, n)
    LEFT JOIN taxonomy_causes rc ON rc.cause = r.reason_cause
)
SELECT o.host || '@' || strftime(o.time_start, '%Y-%m-%dT%H:%M:%S') AS outage_id, o.host, o.time_start,
       CASE WHEN NOT o.still_out THEN o.until END AS time_end, o.still_out,
       date_diff('second', o.time_start, o.until) / 3600.0 AS hours,
       o.state, o.reason, o.reason_rule, o.reason_cause, o.cause,
       coalesce(c.planned, false) AS planned, o.incident_id, o.ticket_id, o.periods, o.first_record
FROM caused o LEFT JOIN taxonomy_causes c USING (cause)
ORDER BY o.host, o.time_start;
