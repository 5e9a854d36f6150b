-- Job-log lines whose job id is not in the accounting (a log of another cluster, or sacct not yet ingested).
SELECT count(*) FROM job_log_lines l WHERE NOT EXISTS (SELECT 1 FROM jobs j WHERE j.job_id = l.job_id)
