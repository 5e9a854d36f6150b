-- The last build of step $step: how many files it read, up to which ingested_at, the newest reading it
-- covered (no row: never built).
SELECT files, ingested_through, data_through FROM derived_marks WHERE step = $step
