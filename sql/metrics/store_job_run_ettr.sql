-- job_run_ettr and run_downtime: the rows of job_run_ettr_scope's runs swapped for the ones computed again (a
-- build that extends the tables; sql/metrics/replace_job_run_ettr.sql replaces them). The digests of what was
-- read replace those of these runs (every run whose digest changed is one) and the days'.
DELETE FROM job_run_ettr WHERE run_id IN (SELECT run_id FROM job_run_ettr_scope);
INSERT INTO job_run_ettr SELECT * FROM staged_job_run_ettr ORDER BY run_id;
DELETE FROM run_downtime WHERE run_id IN (SELECT run_id FROM job_run_ettr_scope);
INSERT INTO run_downtime SELECT * FROM staged_run_downtime ORDER BY run_id;
DELETE FROM job_run_ettr_inputs WHERE kind <> 'run' OR run_id IN (SELECT run_id FROM job_run_ettr_scope);
INSERT INTO job_run_ettr_inputs SELECT * FROM job_run_ettr_inputs_now
WHERE kind <> 'run' OR run_id IN (SELECT run_id FROM job_run_ettr_scope);
DROP TABLE staged_job_run_ettr;
DROP TABLE staged_run_downtime;
DROP TABLE job_run_ettr_scope;
DROP TABLE job_run_ettr_inputs_now;
