-- Cox-Time's 7-day incident probability of every node at the latest as_of.
SELECT host, p_incident FROM node_risk
WHERE as_of = (SELECT max(as_of) FROM node_risk) AND horizon_days = 7 AND model = 'cox_time'
