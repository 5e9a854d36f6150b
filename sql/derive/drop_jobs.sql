-- Before jobs and job_steps are built from scratch: the tables go, so that they take the columns
-- sql/schema/jobs.sql and job_steps.sql declare now (a warehouse from before a column was added).
DROP TABLE IF EXISTS job_steps;
DROP TABLE IF EXISTS jobs;
