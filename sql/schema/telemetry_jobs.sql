-- The job instances the telemetry detectors judged (the columns of sql/telemetry/jobs.sql), the machine-level
-- metrics their telemetry carries and the detector's version.
CREATE TABLE IF NOT EXISTS telemetry_jobs (
    job_id VARCHAR, instance INTEGER, state VARCHAR, start_time TIMESTAMP, end_time TIMESTAMP, hosts VARCHAR[],
    hosts_reporting BIGINT, telemetry_from TIMESTAMP, telemetry_to TIMESTAMP, metrics VARCHAR[], model_version VARCHAR
);
-- a warehouse from before the metrics column
ALTER TABLE telemetry_jobs ADD COLUMN IF NOT EXISTS metrics VARCHAR[];
