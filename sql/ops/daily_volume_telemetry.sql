-- Daily source volume (analysis/ingest/daily.py): telemetry samples taken on $day (port counters included).
SELECT $source AS source, count(*) AS rows FROM telemetry WHERE time >= $day AND time < $day + INTERVAL 1 DAY
