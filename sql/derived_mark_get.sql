-- The last build of step $step: how many files it read and up to which ingested_at (no row: never built).
SELECT files, ingested_through FROM derived_marks WHERE step = $step
