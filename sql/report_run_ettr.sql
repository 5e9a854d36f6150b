SELECT run_id, n_gpus, ettr, scheduled_s / 3600.0 AS scheduled_hours, failures, preemptions FROM job_run_ettr WHERE n_gpus >= 8 AND scheduled_s >= 6 * 3600 AND ettr IS NOT NULL ORDER BY n_gpus
