SELECT count(*) FROM jobs
