-- goodput check: the first port-counter readings (network/ lands in telemetry).
SELECT * EXCLUDE (file) FROM telemetry WHERE starts_with(metric, 'node_infiniband_') ORDER BY file, line_no LIMIT $n
