-- Rows each source produced per day (analysis.ingest.daily): the daily missing-source and drop checks compare them.
CREATE TABLE IF NOT EXISTS daily_source_volume (day DATE, source VARCHAR, rows BIGINT);
