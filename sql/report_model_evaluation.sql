-- model_evaluation at the latest as_of, one row per model with its metrics as columns.
SELECT family, model, split, max(n) AS n,
       max(value) FILTER (WHERE metric = 'anubis_accuracy') AS anubis_accuracy,
       max(value) FILTER (WHERE metric = 'concordance_td') AS concordance,
       max(value) FILTER (WHERE metric = 'integrated_brier_score') AS brier,
       max(value) FILTER (WHERE metric = 'precision') AS precision,
       max(value) FILTER (WHERE metric = 'recall') AS recall,
       max(value) FILTER (WHERE metric = 'false_positive_rate') AS false_positive_rate,
       max(value) FILTER (WHERE metric = 'flagged') AS flagged
FROM model_evaluation WHERE as_of = (SELECT max(as_of) FROM model_evaluation)
GROUP BY family, model, split ORDER BY family, model = 'cox_time' DESC, model
