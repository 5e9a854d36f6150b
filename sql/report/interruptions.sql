-- Interruptions by root cause, in the shape of Llama 3's Table 5 (unexpected interruptions by root-cause category),
-- up to the end of $day. Unplanned: the node incidents (node_incidents: a machine's line or an operator's record,
-- not the user's own) that interrupted something by then: they took the node out of service, a ticket was opened
-- for them, an operator's record began them, or a job failure was blamed on them; an incident that began while its
-- node was already out of service (a node failing again while drained) interrupts nothing new and is not counted.
-- Planned: the node outages of scheduled work (node_outages.planned) that began by then, shown apart and not in
-- the shares. Per 1,000 node-days of the nodes node_availability observes, from the first day of data to $day.
-- Mean repair: an incident's own drain (a drain belongs to the latest incident before it) to its return, a planned
-- outage's length, where both ends were known by the end of $day (repairs_timed: how many the mean is over).
WITH bounds AS (
    SELECT min(first_time) AS data_start, max(last_time) AS data_end,
           $day::TIMESTAMP + INTERVAL 1 DAY AS day_end FROM source_spans
), fleet AS (
    SELECT count(*) AS nodes,
           sum(least(a.hours_observed, greatest(date_diff('second', b.data_start, b.day_end) / 3600.0, 0))) / 24.0 AS node_days
    FROM node_availability a, bounds b
), own AS (
    SELECT *, CASE WHEN drained_at IS NULL OR row_number() OVER (PARTITION BY host, drained_at ORDER BY first_event DESC) = 1
                   THEN drained_at END AS own_drain
    FROM node_incidents
), counted AS (
    SELECT i.* FROM own i CROSS JOIN bounds b LEFT JOIN taxonomy_causes c USING (cause)
    WHERE i.first_event < b.day_end AND coalesce(c.domain, '') <> 'user' AND NOT coalesce(c.planned, false)
      AND (i.own_drain < b.day_end OR i.from_operator OR i.ticket_id IS NOT NULL
           OR EXISTS (SELECT 1 FROM failure_attribution a WHERE a.is_primary AND a.host = i.host
                      AND a.end_time < b.day_end AND a.event_time BETWEEN i.first_event AND i.last_event))
      AND NOT EXISTS (SELECT 1 FROM node_outages o WHERE o.host = i.host AND o.time_start < i.first_event - INTERVAL 5 MINUTE
                      AND (o.time_end IS NULL OR o.time_end > i.first_event))
), unplanned AS (
    SELECT i.cause, false AS planned, count(*) AS interruptions, count(DISTINCT i.host) AS nodes_hit,
           count(*) FILTER (WHERE i.from_operator) AS from_operator, count(*) FILTER (WHERE i.own_drain < b.day_end) AS drained,
           avg(date_diff('second', i.own_drain, i.returned_at) / 3600.0)
               FILTER (WHERE i.own_drain IS NOT NULL AND i.returned_at < b.day_end) AS mean_repair_hours,
           count(*) FILTER (WHERE i.own_drain IS NOT NULL AND i.returned_at < b.day_end) AS repairs_timed
    FROM counted i CROSS JOIN bounds b
    GROUP BY i.cause
), planned AS (
    SELECT o.cause, true AS planned, count(*) AS interruptions, count(DISTINCT o.host) AS nodes_hit, 0 AS from_operator,
           count(*) AS drained,
           avg(o.hours) FILTER (WHERE o.time_end < b.day_end) AS mean_repair_hours,
           count(*) FILTER (WHERE o.time_end < b.day_end) AS repairs_timed
    FROM node_outages o CROSS JOIN bounds b
    WHERE o.planned AND o.time_start < b.day_end
    GROUP BY o.cause
), rows AS (
    SELECT * FROM unplanned UNION ALL SELECT * FROM planned
)
SELECT r.cause, coalesce(c.label, r.cause) AS label, coalesce(c.component, 'Unknown') AS component, r.planned,
       r.interruptions, r.nodes_hit, r.from_operator, r.drained,
       CASE WHEN NOT r.planned THEN r.interruptions / sum(r.interruptions) FILTER (WHERE NOT r.planned) OVER () END AS share,
       1000.0 * r.interruptions / nullif(f.node_days, 0) AS per_1000_node_days,
       r.mean_repair_hours, r.repairs_timed,
       b.data_start::DATE AS first_day, least(b.data_end::DATE, $day::DATE) AS last_day, f.nodes, f.node_days
FROM rows r CROSS JOIN fleet f CROSS JOIN bounds b LEFT JOIN taxonomy_causes c USING (cause)
ORDER BY r.planned, r.interruptions DESC, label, r.cause
