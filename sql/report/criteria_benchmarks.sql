-- Per benchmark of the latest criteria: repeatability among healthy nodes and the margin ratio of
-- Algorithm 2 against the IQR and k-means baselines (criteria_evaluation).
SELECT * FROM criteria_evaluation
WHERE version = (SELECT version FROM benchmark_criteria ORDER BY trained_to DESC, version DESC LIMIT 1)
ORDER BY "group", benchmark
