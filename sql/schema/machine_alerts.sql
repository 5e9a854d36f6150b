-- The telemetry detectors' alerts per judged job instance (analysis.telemetry.run).
CREATE TABLE IF NOT EXISTS machine_alerts (
    job_id VARCHAR, instance INTEGER, host VARCHAR, metric VARCHAR, method VARCHAR,
    window_start TIMESTAMP, confirmed_at TIMESTAMP, score DOUBLE, metric_rank INTEGER, model_version VARCHAR
);
