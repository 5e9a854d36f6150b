-- The telemetry detectors side by side on the latest detection run's jobs.
CREATE TABLE IF NOT EXISTS detector_evaluation (
    method VARCHAR, against VARCHAR, "precision" DOUBLE, recall DOUBLE, f1 DOUBLE, mean_detection_delay_s DOUBLE,
    n_jobs BIGINT, faulty_jobs BIGINT, false_alarms BIGINT, wrong_host BIGINT, model_version VARCHAR
);
