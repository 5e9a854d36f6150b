SELECT count(*) FROM node_events
