-- How each node model (family incident or lemon) did on held-out data, per as_of.
CREATE TABLE IF NOT EXISTS model_evaluation (
    model VARCHAR, metric VARCHAR, value DOUBLE, split VARCHAR, n BIGINT, trained_at TIMESTAMP, as_of TIMESTAMP,
    family VARCHAR
);
