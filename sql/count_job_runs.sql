SELECT count(*) FROM job_runs
