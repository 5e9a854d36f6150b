SELECT count(*) FROM job_run_ettr
