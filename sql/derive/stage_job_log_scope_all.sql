-- job_log_scope when every job's events are placed again ($all in build_job_log_events.sql): empty and unused
-- (there may be no last build, so no job_log_jobs, to compare with).
CREATE OR REPLACE TEMP TABLE job_log_scope (job_id VARCHAR);
