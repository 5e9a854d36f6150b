-- model_evaluation rows of one model family for one as_of (staged_model_evaluation), replacing earlier ones.
CREATE TABLE IF NOT EXISTS model_evaluation (
    model VARCHAR, metric VARCHAR, value DOUBLE, split VARCHAR, n BIGINT, trained_at TIMESTAMP, as_of TIMESTAMP,
    family VARCHAR
);
DELETE FROM model_evaluation WHERE as_of = $as_of AND family = $family;
INSERT INTO model_evaluation BY NAME SELECT * FROM staged_model_evaluation;
