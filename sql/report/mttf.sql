SELECT * FROM mttf_by_job_size ORDER BY bucket_gpus
