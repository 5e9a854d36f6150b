-- node_population: every host in the topology or seen in any source, at risk
-- from its first appearance (a topology host with no data of its own: from
-- the start of the data).
CREATE OR REPLACE VIEW node_population AS
WITH seen AS (
    SELECT host, min(t) AS first_seen FROM (
        SELECT host, min(event_time) AS t FROM node_events WHERE host IS NOT NULL GROUP BY host
        UNION ALL SELECT host, min(opened) FROM tickets GROUP BY host
        UNION ALL SELECT host, min(time_start) FROM node_states GROUP BY host
        UNION ALL SELECT host, min(start_time) FROM (SELECT unnest(nodes) AS host, start_time FROM jobs) GROUP BY host
    ) WHERE host IS NOT NULL GROUP BY host
)
SELECT host, min(first_seen) AS first_seen FROM (
    SELECT host, first_seen FROM seen
    UNION ALL SELECT host, (SELECT coalesce(min(first_seen), TIMESTAMP '1970-01-01') FROM seen) FROM topology WHERE host IS NOT NULL
) GROUP BY host
