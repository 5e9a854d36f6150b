-- Rows per source whose own time falls on $day (job end, event time, benchmark run, sample time).
SELECT 'slurm' AS source, count(*) AS rows FROM jobs WHERE end_time >= $day AND end_time < $day + INTERVAL 1 DAY
UNION ALL
-- (job-log, port-counter and telemetry events are findings, not feeds: a day without failures has none)
SELECT source, count(*) FROM node_events WHERE event_time >= $day AND event_time < $day + INTERVAL 1 DAY
  AND source NOT IN ('app', 'network', 'telemetry') GROUP BY source
UNION ALL
SELECT 'benchmarks', count(*) FROM benchmark_results WHERE run_time >= $day AND run_time < $day + INTERVAL 1 DAY
UNION ALL
SELECT 'telemetry', count(*) FROM telemetry WHERE time >= $day AND time < $day + INTERVAL 1 DAY
