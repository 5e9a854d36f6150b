-- model_evaluation rows of one model family for one as_of (staged_model_evaluation), replacing earlier ones.
DELETE FROM model_evaluation WHERE as_of = $as_of AND family = $family;
INSERT INTO model_evaluation BY NAME SELECT * FROM staged_model_evaluation;
