-- lemon_scores for one as_of (staged_lemon_scores), replacing that as_of's rows.
CREATE TABLE IF NOT EXISTS lemon_scores (
    host VARCHAR, as_of TIMESTAMP, score DOUBLE, is_lemon BOOLEAN, top_signals VARCHAR[],
    suggested_component VARCHAR, method VARCHAR, meta_is_lemon BOOLEAN, meta_signals VARCHAR[]
);
DELETE FROM lemon_scores WHERE as_of = $as_of;
INSERT INTO lemon_scores BY NAME SELECT * FROM staged_lemon_scores;
