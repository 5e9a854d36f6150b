-- goodput check: the hosts a node-event source (kernel, switch, health) names.
SELECT DISTINCT host FROM node_events WHERE host IS NOT NULL AND source = $kind_source
