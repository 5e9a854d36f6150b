-- The criteria of the latest version (the one the exports and the report show).
SELECT * FROM benchmark_criteria
WHERE version = (SELECT version FROM benchmark_criteria ORDER BY trained_to DESC, version DESC LIMIT 1)
ORDER BY "group", benchmark, metric
