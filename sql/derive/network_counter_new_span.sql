-- The counter readings of the $sources files ingested after $through: how many, and the oldest one's time.
SELECT count(*) AS readings, min(time) AS first FROM telemetry
WHERE starts_with(metric, 'node_infiniband_') AND contains(metric, '_total')
  AND file IN (SELECT path FROM ingested_files
               WHERE list_contains($sources, source) AND status = 'ok' AND ingested_at > $through)
