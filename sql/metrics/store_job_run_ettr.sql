-- job_run_ettr and run_downtime: the rows of job_run_ettr_scope's runs swapped for the ones computed again (a
-- build that extends the tables; sql/metrics/replace_job_run_ettr.sql replaces them). The digests of what was
-- read replace those of the runs and days that changed.
DELETE FROM job_run_ettr WHERE run_id IN (SELECT run_id FROM job_run_ettr_scope);
INSERT INTO job_run_ettr SELECT * FROM staged_job_run_ettr ORDER BY run_id;
DELETE FROM run_downtime WHERE run_id IN (SELECT run_id FROM job_run_ettr_scope);
INSERT INTO run_downtime SELECT * FROM staged_run_downtime ORDER BY run_id;
DELETE FROM job_run_ettr_inputs k WHERE NOT EXISTS (
    SELECT 1 FROM job_run_ettr_inputs_now n WHERE n.kind = k.kind AND n.run_id IS NOT DISTINCT FROM k.run_id
       AND n.day IS NOT DISTINCT FROM k.day AND n.n = k.n AND n.digest = k.digest);
INSERT INTO job_run_ettr_inputs SELECT * FROM job_run_ettr_inputs_now n WHERE NOT EXISTS (
    SELECT 1 FROM job_run_ettr_inputs k WHERE n.kind = k.kind AND n.run_id IS NOT DISTINCT FROM k.run_id
       AND n.day IS NOT DISTINCT FROM k.day);
DROP TABLE staged_job_run_ettr;
DROP TABLE staged_run_downtime;
DROP TABLE job_run_ettr_scope;
DROP TABLE job_run_ettr_inputs_now;
