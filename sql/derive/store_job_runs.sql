-- job_runs: the rows of job_run_scope's jobs swapped for the ones staged_job_runs chained again (a build that
-- extends the table; sql/derive/replace_job_runs.sql replaces it).
DELETE FROM job_runs WHERE job_id IN (SELECT job_id FROM job_run_scope);
INSERT INTO job_runs SELECT * FROM staged_job_runs ORDER BY run_id, run_seq;
DROP TABLE staged_job_runs;
DROP TABLE job_run_scope;
DROP TABLE job_run_inputs;
