SELECT count(*) FROM node_events WHERE source = 'switch' AND host IS NULL
