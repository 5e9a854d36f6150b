-- Which node-model tables exist (a warehouse from before `goodput models` has none).
SELECT table_name FROM duckdb_tables()
WHERE table_name IN ('lemon_scores', 'node_risk', 'model_evaluation', 'node_actions', 'validation_plan',
                     'benchmark_criteria', 'criteria_evaluation', 'benchmark_verdicts',
                     'machine_alerts', 'telemetry_jobs', 'detector_evaluation') AND NOT temporary
