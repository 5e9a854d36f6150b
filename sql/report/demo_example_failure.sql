SELECT job_id, cause FROM job_failure_causes WHERE infra_failure ORDER BY n_gpus DESC, job_id LIMIT 1
