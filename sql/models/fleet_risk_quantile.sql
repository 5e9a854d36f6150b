-- The fleet's $q quantile of 7-day Cox-Time incident probability as of $as_of.
SELECT quantile_cont(p_incident, $q) FROM node_risk
WHERE as_of = $as_of AND horizon_days = 7 AND model = 'cox_time'
