-- bench/derived_steps.py: the jobs that the sacct dumps ingested after $through name, taken as changed
-- since job_log_events was last built (out of the instances it placed their logs with).
DELETE FROM job_log_jobs WHERE job_id IN (SELECT job_id FROM sacct_records WHERE file IN
    (SELECT path FROM ingested_files WHERE source = 'slurm' AND ingested_at > $through))
