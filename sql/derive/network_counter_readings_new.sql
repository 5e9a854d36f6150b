-- Counter readings of the $sources files ingested after $through, and each series' last reading at or
-- before $data_through (what the first new reading is differenced against), in time order per series.
WITH counters AS (
    SELECT time, host, metric, value, file FROM telemetry
    WHERE starts_with(metric, 'node_infiniband_') AND contains(metric, '_total')
)
SELECT time, host, metric, value FROM counters
WHERE file IN (SELECT path FROM ingested_files
               WHERE list_contains($sources, source) AND status = 'ok' AND ingested_at > $through)
UNION ALL
SELECT max(time), host, metric, arg_max(value, time) FROM counters WHERE time <= $data_through GROUP BY host, metric
ORDER BY host, metric, time
