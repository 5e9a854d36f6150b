-- One part of the node_exporter InfiniBand counter series (node_infiniband_*_total, ports in Prometheus
-- labels), from telemetry/ or network/: the hosts whose hash falls in part $part of $parts, in time order
-- per series (analysis.network.counters differences them). A series never spans two parts (one host).
SELECT time, host, metric, value FROM telemetry
WHERE starts_with(metric, 'node_infiniband_') AND contains(metric, '_total')
  AND hash(host) % $parts = $part
ORDER BY host, metric, time
