-- node_availability: each node's time out of service over the whole data span (source_spans), every node
-- any source names (topology, jobs, node events, node states, tickets) observed from the first day of data
-- to the last: availability = 1 - hours out / hours observed; MTBF = hours observed / unplanned outages;
-- MTTR = mean hours of its closed unplanned outages. Planned work is counted apart (planned_hours_out).
CREATE OR REPLACE TABLE node_availability AS
WITH span AS (
    SELECT min(first_time) AS data_start, max(last_time) AS data_end FROM source_spans
), hosts AS (
    SELECT DISTINCT host FROM (
        SELECT host FROM topology UNION ALL SELECT host FROM node_events UNION ALL SELECT host FROM node_states
        UNION ALL SELECT host FROM tickets UNION ALL SELECT unnest(nodes) FROM jobs
    ) WHERE host IS NOT NULL
), per_host AS (
    SELECT host, count(*) FILTER (WHERE NOT planned) AS outages, count(*) FILTER (WHERE planned) AS planned_outages,
           coalesce(sum(hours) FILTER (WHERE NOT planned), 0) AS hours_out,
           coalesce(sum(hours) FILTER (WHERE planned), 0) AS planned_hours_out,
           avg(hours) FILTER (WHERE NOT planned AND NOT still_out) AS mttr_hours,
           bool_or(still_out) AS out_now,
           list(DISTINCT cause ORDER BY cause) FILTER (WHERE NOT planned) AS causes
    FROM node_outages GROUP BY host
), cause_counts AS (
    SELECT host, cause, count(*) AS n, sum(hours) AS hours
    FROM node_outages WHERE NOT planned AND cause IS NOT NULL GROUP BY host, cause
), top_causes AS (
    -- the most frequent cause; a tie goes to the most hours out, then the name (mode() took either: the
    -- table depended on row order)
    SELECT host, first(cause ORDER BY n DESC, hours DESC NULLS LAST, cause) AS top_cause FROM cause_counts GROUP BY host
)
SELECT h.host, date_diff('second', s.data_start, s.data_end) / 3600.0 AS hours_observed,
       coalesce(p.outages, 0) AS outages, coalesce(p.planned_outages, 0) AS planned_outages,
       coalesce(p.hours_out, 0) AS hours_out, coalesce(p.planned_hours_out, 0) AS planned_hours_out,
       1 - (coalesce(p.hours_out, 0) + coalesce(p.planned_hours_out, 0))
           / nullif(date_diff('second', s.data_start, s.data_end) / 3600.0, 0) AS availability,
       date_diff('second', s.data_start, s.data_end) / 3600.0 / nullif(p.outages, 0) AS mtbf_hours,
       p.mttr_hours, coalesce(p.out_now, false) AS out_now, c.top_cause, coalesce(p.causes, []) AS causes
FROM hosts h CROSS JOIN span s LEFT JOIN per_host p USING (host) LEFT JOIN top_causes c USING (host)
ORDER BY hours_out DESC, host;
-- availability_by_cause: node outages per cause over the fleet: count, node-hours out, mean and median time
-- to repair (closed outages), MTBF (the fleet's observed node-hours per outage) and outages per 1,000 node-days.
CREATE OR REPLACE VIEW availability_by_cause AS
WITH fleet AS (SELECT sum(hours_observed) AS node_hours FROM node_availability)
SELECT o.cause, c.label, c.component, coalesce(c.planned, false) AS planned, count(*) AS outages,
       count(DISTINCT o.host) AS nodes, sum(o.hours) AS node_hours_out,
       sum(o.hours) / sum(sum(o.hours)) OVER () AS share_of_hours_out,
       avg(o.hours) FILTER (WHERE NOT o.still_out) AS mttr_hours,
       median(o.hours) FILTER (WHERE NOT o.still_out) AS median_ttr_hours,
       any_value(f.node_hours) / count(*) AS mtbf_hours,
       1000.0 * count(*) / nullif(any_value(f.node_hours) / 24.0, 0) AS per_1000_node_days
FROM node_outages o CROSS JOIN fleet f LEFT JOIN taxonomy_causes c USING (cause)
GROUP BY o.cause, c.label, c.component, c.planned
ORDER BY planned, outages DESC, o.cause;
-- availability_by_week: outages by the week they began (Monday), per cause.
CREATE OR REPLACE VIEW availability_by_week AS
SELECT date_trunc('week', o.time_start)::DATE AS week, o.cause, coalesce(c.planned, false) AS planned,
       count(*) AS outages, count(DISTINCT o.host) AS nodes, sum(o.hours) AS node_hours_out,
       avg(o.hours) FILTER (WHERE NOT o.still_out) AS mttr_hours
FROM node_outages o LEFT JOIN taxonomy_causes c USING (cause)
GROUP BY ALL ORDER BY week, outages DESC, o.cause;
