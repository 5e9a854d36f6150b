-- How many counter readings analysis.network.run differences (it splits them into parts by host).
SELECT count(*) FROM telemetry WHERE starts_with(metric, 'node_infiniband_') AND contains(metric, '_total')
