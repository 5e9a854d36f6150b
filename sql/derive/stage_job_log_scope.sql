-- job_log_scope: the jobs whose job-log events must be placed again, when not all of them are
-- (derive/stage_job_log_scope_all.sql). A job's events depend only on its own log lines and its own instances in
-- jobs (and on the addresses of topology and /etc/hosts, whose change rebuilds everything: analysis/derive/joblogs.py).
-- So: the jobs named by a job-log file ingested after $through, and the jobs with logs whose instances
-- differ from those the last build placed them with (job_log_jobs, which that build created), either way.
CREATE OR REPLACE TEMP TABLE job_log_scope AS
WITH now_placed AS (
    SELECT job_id, instance, start_time, end_time, nodes FROM jobs
    WHERE job_id IN (SELECT job_id FROM job_log_lines)
), last_placed AS (
    SELECT job_id, instance, start_time, end_time, nodes FROM job_log_jobs
)
SELECT DISTINCT job_id FROM job_log_lines
WHERE file IN (SELECT path FROM ingested_files
               WHERE source = 'joblogs' AND status = 'ok' AND ingested_at > $through)
UNION
SELECT job_id FROM (SELECT * FROM now_placed EXCEPT SELECT * FROM last_placed)
UNION
SELECT job_id FROM (SELECT * FROM last_placed EXCEPT SELECT * FROM now_placed);
