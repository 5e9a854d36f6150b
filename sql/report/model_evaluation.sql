-- model_evaluation at each family's latest as_of (its model's last training: the families retrain on
-- their own cadence), one row per model with its metrics as columns.
SELECT family, model, split, max(n) AS n,
       max(value) FILTER (WHERE metric = 'anubis_accuracy') AS anubis_accuracy,
       max(value) FILTER (WHERE metric = 'concordance_td') AS concordance,
       max(value) FILTER (WHERE metric = 'integrated_brier_score') AS brier,
       max(value) FILTER (WHERE metric = 'precision') AS precision,
       max(value) FILTER (WHERE metric = 'recall') AS recall,
       max(value) FILTER (WHERE metric = 'false_positive_rate') AS false_positive_rate,
       max(value) FILTER (WHERE metric = 'flagged') AS flagged
FROM model_evaluation WHERE (family, as_of) IN (SELECT (family, max(as_of)) FROM model_evaluation GROUP BY family)
GROUP BY family, model, split ORDER BY family, model = 'cox_time' DESC, model
