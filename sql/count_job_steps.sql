SELECT count(*) FROM job_steps
