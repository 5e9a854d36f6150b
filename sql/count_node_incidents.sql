SELECT count(*) FROM node_incidents
