-- telemetry_metrics (TEMP): the telemetry's metric names, once each, for stage_step_times_telemetry to match its
-- pattern against: in one statement DuckDB pushes the match below the DISTINCT and runs it on every sample (a
-- second a night on months of telemetry, where the names are a dozen).
CREATE OR REPLACE TEMP TABLE telemetry_metrics AS SELECT DISTINCT metric FROM telemetry;
