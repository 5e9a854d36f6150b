-- Runs plotted against the expected-ETTR curve: at least $min_gpus GPUs and $min_hours scheduled, ended by $day;
-- size: the report's one job-size bucket (size_bucket).
SELECT run_id, n_gpus, size_bucket(n_gpus) AS size, ettr, scheduled_s / 3600.0 AS scheduled_hours,
       productive_s / 3600.0 AS productive_hours, queue_s / 3600.0 / instances AS queue_hours_per_start, failures, preemptions
FROM job_run_ettr
WHERE n_gpus >= $min_gpus AND scheduled_s >= $min_hours * 3600 AND ettr IS NOT NULL
  AND last_end < $day::TIMESTAMP + INTERVAL 1 DAY
ORDER BY n_gpus, run_id  -- a total order: the table's rows are in no order once a nightly extends it
