-- Every host the warehouse knows: in the topology or seen in any source.
SELECT DISTINCT host FROM (
    SELECT host FROM topology UNION ALL SELECT host FROM node_events UNION ALL SELECT host FROM tickets
    UNION ALL SELECT host FROM node_states UNION ALL SELECT unnest(nodes) FROM jobs
) WHERE host IS NOT NULL
