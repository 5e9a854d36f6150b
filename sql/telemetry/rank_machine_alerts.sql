-- The alerts of detector $version take their metric's place in its metric priority ($priority, ranked
-- after attribution: analysis.telemetry.run.rank_metrics); a metric outside it (missing_data's list) goes last.
UPDATE machine_alerts SET metric_rank = coalesce(list_position($priority::VARCHAR[], metric) - 1, len($priority::VARCHAR[]))
WHERE model_version = $version
