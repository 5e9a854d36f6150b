-- model_evaluation rows of one model family stored for one as_of (when its saved model was trained).
SELECT * FROM model_evaluation WHERE family = $family AND as_of = $as_of ORDER BY model, metric
