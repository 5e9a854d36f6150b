-- What job_run_ettr and run_downtime were last built from (sql/metrics/stage_job_run_ettr_inputs.sql): per run
-- (kind 'run'), a digest of its instances' rows in job_runs, jobs and failure_attribution and of its jobs' progress
-- lines and app events; per day (kind 'drains'), a digest of the drains run_downtime reads. The next build
-- computes again only the runs whose digest changed and those whose windows reach the first day that changed
-- (analysis/derive/metrics.py build_run_ettr).
CREATE TABLE IF NOT EXISTS job_run_ettr_inputs (kind VARCHAR, run_id VARCHAR, day TIMESTAMP, n BIGINT, digest HUGEINT);
