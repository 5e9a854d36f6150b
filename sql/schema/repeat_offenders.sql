-- Repeat offenders, each as-of's rows (sql/models/build_repeat_offenders.sql).
CREATE TABLE IF NOT EXISTS repeat_offenders (
    host VARCHAR, as_of TIMESTAMP, window_days INTEGER, incidents BIGINT, threshold INTEGER, fleet_rate DOUBLE,
    causes VARCHAR[], top_cause VARCHAR, top_cause_incidents BIGINT, hours_out DOUBLE, median_gap_days DOUBLE,
    first_incident TIMESTAMP, last_incident TIMESTAMP, escalation VARCHAR, reason VARCHAR);
