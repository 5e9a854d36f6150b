-- node_exporter InfiniBand counter series (node_infiniband_*_total, ports in Prometheus labels), from
-- telemetry/ or network/, in time order per series (analysis.network.counters differences them).
SELECT time, host, metric, value FROM telemetry
WHERE starts_with(metric, 'node_infiniband_') AND contains(metric, '_total')
ORDER BY host, metric, time
