-- Nodes worth validating as of $as_of: Cox-Time's 7-day incident probability
-- over $target, not being drained (those go to repair, not to validation),
-- with their incident counts per category so far and the fleet's.
WITH status AS (
    SELECT host, gpu_all, host_all, network_all, storage_all FROM incident_samples WHERE t = $as_of
), fleet AS (
    SELECT sum(gpu_all) AS fleet_gpu, sum(host_all) AS fleet_host, sum(network_all) AS fleet_network,
           sum(storage_all) AS fleet_storage FROM status
)
SELECT r.host, r.p_incident, s.gpu_all, s.host_all, s.network_all, s.storage_all, f.*
FROM node_risk r JOIN status s USING (host) CROSS JOIN fleet f
WHERE r.as_of = $as_of AND r.horizon_days = 7 AND r.model = 'cox_time' AND r.p_incident > $target
  AND r.host NOT IN (SELECT host FROM node_action_history WHERE as_of = $as_of AND action = 'drain_now')
ORDER BY r.p_incident DESC, r.host
