-- The newest counter reading's time (what a port_counter_events build covered).
SELECT max(time) FROM telemetry WHERE starts_with(metric, 'node_infiniband_') AND contains(metric, '_total')
