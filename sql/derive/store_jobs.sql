-- jobs and job_steps from staged_jobs and staged_job_steps: $all replaces the tables, else the rows of
-- changed_jobs are swapped for the staged ones (the tables: sql/schema/jobs.sql, job_steps.sql).
DELETE FROM jobs WHERE $all OR job_id IN (SELECT job_id FROM changed_jobs);
INSERT INTO jobs BY NAME SELECT * FROM staged_jobs ORDER BY job_id, instance;
DELETE FROM job_steps WHERE $all OR job_id IN (SELECT job_id FROM changed_jobs);
INSERT INTO job_steps BY NAME SELECT * FROM staged_job_steps ORDER BY job_id, instance, start_time, step_id;
DROP TABLE staged_jobs;
DROP TABLE staged_k8s_jobs;
DROP TABLE staged_job_steps;
DROP TABLE changed_jobs;
-- job_days: every day from the first job start to the last job end, the grid
-- the per-day metrics (failure rate over time, goodput) are laid on.
CREATE OR REPLACE VIEW job_days AS
SELECT unnest(generate_series(first_day, last_day, INTERVAL 1 DAY)) AS day FROM (
    SELECT date_trunc('day', min(start_time)) AS first_day, date_trunc('day', max(end_time)) AS last_day
    FROM jobs WHERE start_time IS NOT NULL AND end_time IS NOT NULL);
