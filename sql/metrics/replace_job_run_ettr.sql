-- job_run_ettr and run_downtime: every run computed (staged over job_run_ettr_scope_all), the tables replaced, and
-- with them the digests of what was read.
CREATE OR REPLACE TABLE job_run_ettr AS SELECT * FROM staged_job_run_ettr ORDER BY run_id;
CREATE OR REPLACE TABLE run_downtime AS SELECT * FROM staged_run_downtime ORDER BY run_id;
DELETE FROM job_run_ettr_inputs;
INSERT INTO job_run_ettr_inputs SELECT * FROM job_run_ettr_inputs_now;  -- in no order: only joined on
DROP TABLE staged_job_run_ettr;
DROP TABLE staged_run_downtime;
DROP TABLE job_run_ettr_scope;
DROP TABLE job_run_ettr_inputs_now;
