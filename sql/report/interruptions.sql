-- Interruptions by root cause, in the shape of Llama 3's Table 5 (unexpected interruptions by root-cause category),
-- up to the end of $day. Unplanned: every node incident (node_incidents: a machine's line or an operator's record,
-- not the user's own) that began by then; planned: the node outages of scheduled work (node_outages.planned) that
-- began by then, shown apart and not in the shares. Per 1,000 node-days of the nodes node_availability observes,
-- from the first day of data to $day. Mean repair: a drained incident's drain to its return, a planned outage's
-- length, where both ends were known by the end of $day (repairs_timed: how many the mean is over). drained: the
-- incidents that took their node out of service (a drain or down within 6 hours) by then.
WITH bounds AS (
    SELECT min(first_time) AS data_start, max(last_time) AS data_end,
           $day::TIMESTAMP + INTERVAL 1 DAY AS day_end FROM source_spans
), fleet AS (
    SELECT count(*) AS nodes,
           sum(least(a.hours_observed, greatest(date_diff('second', b.data_start, b.day_end) / 3600.0, 0))) / 24.0 AS node_days
    FROM node_availability a, bounds b
), unplanned AS (
    SELECT i.cause, false AS planned, count(*) AS interruptions, count(DISTINCT i.host) AS nodes_hit,
           count(*) FILTER (WHERE i.from_operator) AS from_operator, count(*) FILTER (WHERE i.drained_at < b.day_end) AS drained,
           avg(date_diff('second', i.drained_at, i.returned_at) / 3600.0) FILTER (WHERE i.returned_at < b.day_end) AS mean_repair_hours,
           count(*) FILTER (WHERE i.drained_at IS NOT NULL AND i.returned_at < b.day_end) AS repairs_timed
    FROM node_incidents i CROSS JOIN bounds b LEFT JOIN taxonomy_causes c USING (cause)
    WHERE i.first_event < b.day_end AND coalesce(c.domain, '') <> 'user' AND NOT coalesce(c.planned, false)
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
