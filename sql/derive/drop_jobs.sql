-- Before jobs and job_steps are built from scratch: the tables go, so that they take the staged columns.
DROP TABLE IF EXISTS job_steps;
DROP TABLE IF EXISTS jobs;
