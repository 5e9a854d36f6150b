-- The $limit nodes out of service longest (node_availability: unplanned hours first, then planned), each with its
-- longest outage's reason as the operator wrote it (node_outages.reason), and the fleet's totals beside them.
WITH fleet AS (
    SELECT count(*) AS fleet_nodes, sum(hours_observed) AS fleet_hours,
           count(*) FILTER (WHERE outages + planned_outages > 0) AS nodes_out_ever,
           1 - sum(hours_out + planned_hours_out) / nullif(sum(hours_observed), 0) AS fleet_availability,
           sum(hours_out) AS fleet_hours_out, sum(planned_hours_out) AS fleet_planned_hours_out
    FROM node_availability
), longest AS (
    SELECT host, max(hours) AS longest_hours,
           first(time_start ORDER BY hours DESC, time_start) AS longest_start,
           first(still_out ORDER BY hours DESC, time_start) AS longest_still_out,
           first(reason ORDER BY hours DESC, time_start) AS longest_reason,
           first(cause ORDER BY hours DESC, time_start) AS longest_cause
    FROM node_outages GROUP BY host
)
SELECT a.host, a.availability, a.outages, a.planned_outages, a.hours_out, a.planned_hours_out, a.mtbf_hours,
       a.mttr_hours, a.out_now, a.top_cause, coalesce(c.label, a.top_cause) AS top_cause_label,
       l.longest_hours, l.longest_start, l.longest_still_out, l.longest_reason,
       coalesce(lc.label, l.longest_cause) AS longest_cause_label, f.*
FROM node_availability a CROSS JOIN fleet f
LEFT JOIN longest l USING (host)
LEFT JOIN taxonomy_causes c ON c.cause = a.top_cause
LEFT JOIN taxonomy_causes lc ON lc.cause = l.longest_cause
WHERE a.outages + a.planned_outages > 0
ORDER BY a.hours_out DESC, a.planned_hours_out DESC, a.host
LIMIT $limit
