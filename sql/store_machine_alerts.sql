-- Alerts of one detection run (analysis.telemetry.run), replacing the previous run's; the confirmed
-- Minder alerts also go into node_events (source telemetry) so attribution, incidents and the
-- blocklist see them.
CREATE TABLE IF NOT EXISTS machine_alerts (
    job_id VARCHAR, instance INTEGER, host VARCHAR, metric VARCHAR, method VARCHAR,
    window_start TIMESTAMP, confirmed_at TIMESTAMP, score DOUBLE, metric_rank INTEGER, model_version VARCHAR
);
CREATE OR REPLACE TABLE telemetry_jobs AS SELECT * FROM staged_jobs;
CREATE OR REPLACE TABLE link_suspects AS SELECT * FROM staged_links;
CREATE TABLE IF NOT EXISTS detector_evaluation (
    method VARCHAR, against VARCHAR, "precision" DOUBLE, recall DOUBLE, f1 DOUBLE, mean_detection_delay_s DOUBLE,
    n_jobs BIGINT, faulty_jobs BIGINT, false_alarms BIGINT, wrong_host BIGINT, model_version VARCHAR
);
DELETE FROM machine_alerts;
INSERT INTO machine_alerts BY NAME SELECT * FROM staged_alerts;
DELETE FROM node_events WHERE source = 'telemetry' AND file LIKE 'goodput:telemetry%';
INSERT INTO node_events BY NAME SELECT * FROM staged_alert_events;
