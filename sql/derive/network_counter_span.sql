-- The counter readings analysis.network.run differences: how many (it splits them into parts by host), and
-- the newest one's time (what its build covered).
SELECT count(*) AS readings, max(time) AS newest FROM telemetry
WHERE starts_with(metric, 'node_infiniband_') AND contains(metric, '_total')
