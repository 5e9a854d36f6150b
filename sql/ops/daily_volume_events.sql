-- Daily source volume (analysis/ingest/daily.py): node events of source $source on $day (no row when there are none).
SELECT source, count(*) AS rows FROM node_events WHERE event_time >= $day AND event_time < $day + INTERVAL 1 DAY
  AND source = $source GROUP BY source
