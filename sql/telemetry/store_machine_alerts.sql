-- Alerts of one detection run (analysis.telemetry.run) for the jobs it judged (staged_jobs, with the
-- metrics their telemetry carries and the model's version), replacing those jobs' earlier results and
-- keeping the rest; the confirmed Minder alerts also go into
-- node_events (source telemetry, file goodput:telemetry/<job>/<instance>) so attribution, incidents
-- and the blocklist see them. The tables: sql/schema/ (machine_alerts, telemetry_jobs, link_suspects).
CREATE OR REPLACE TEMP TABLE judged AS SELECT DISTINCT job_id::VARCHAR AS job_id, instance FROM staged_jobs;
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
