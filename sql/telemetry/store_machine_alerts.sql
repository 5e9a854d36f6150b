-- Alerts of one detection run (analysis.telemetry.run) for the jobs it judged (staged_jobs, with the
-- metrics their telemetry carries and the model's version), replacing those jobs' earlier results and
-- keeping the rest; the confirmed Minder alerts also go into
-- node_events (source telemetry, file goodput:telemetry/<job>/<instance>) so attribution, incidents
-- and the blocklist see them.
CREATE TABLE IF NOT EXISTS machine_alerts (
    job_id VARCHAR, instance INTEGER, host VARCHAR, metric VARCHAR, method VARCHAR,
    window_start TIMESTAMP, confirmed_at TIMESTAMP, score DOUBLE, metric_rank INTEGER, model_version VARCHAR
);
CREATE TABLE IF NOT EXISTS telemetry_jobs AS SELECT * FROM staged_jobs LIMIT 0;
-- a warehouse from before the metrics column
ALTER TABLE telemetry_jobs ADD COLUMN IF NOT EXISTS metrics VARCHAR[];
CREATE TABLE IF NOT EXISTS link_suspects AS SELECT * FROM staged_links LIMIT 0;
CREATE OR REPLACE TEMP TABLE judged AS SELECT DISTINCT job_id::VARCHAR AS job_id, instance FROM staged_jobs;
CREATE TABLE IF NOT EXISTS detector_evaluation (
    method VARCHAR, against VARCHAR, "precision" DOUBLE, recall DOUBLE, f1 DOUBLE, mean_detection_delay_s DOUBLE,
    n_jobs BIGINT, faulty_jobs BIGINT, false_alarms BIGINT, wrong_host BIGINT, model_version VARCHAR
);
DELETE FROM telemetry_jobs WHERE (job_id::VARCHAR, instance) IN (SELECT (job_id, instance) FROM judged);
INSERT INTO telemetry_jobs BY NAME SELECT * FROM staged_jobs;
-- every job staged this run (a retrain stages its training jobs too) gets its metrics: the detector's
-- metric set is checked against them (analysis/telemetry/saved.py)
UPDATE telemetry_jobs t SET metrics = m.metrics FROM staged_job_metrics m
WHERE t.job_id::VARCHAR = m.job_id::VARCHAR AND t.instance = m.instance;
DELETE FROM machine_alerts WHERE (job_id, instance) IN (SELECT (job_id, instance) FROM judged);
INSERT INTO machine_alerts BY NAME SELECT * FROM staged_alerts;
DELETE FROM link_suspects WHERE (job_id, instance) IN (SELECT (job_id, instance) FROM judged);
INSERT INTO link_suspects BY NAME SELECT * FROM staged_links;
DELETE FROM node_events WHERE source = 'telemetry'
    AND file IN (SELECT 'goodput:telemetry/' || job_id || '/' || instance FROM judged);
INSERT INTO node_events BY NAME SELECT * FROM staged_alert_events;
