-- Daily source volume (analysis/ingest/daily.py): benchmark results of runs on $day.
SELECT $source AS source, count(*) AS rows FROM benchmark_results WHERE run_time >= $day AND run_time < $day + INTERVAL 1 DAY
