-- The last line_no of the port-counter node events (new ones are numbered after it).
SELECT coalesce(max(line_no), 0) FROM node_events WHERE source = 'network' AND file = 'goodput:network-counters'
