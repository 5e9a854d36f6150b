-- lemon_scores for one as_of (staged_lemon_scores), replacing that as_of's rows.
DELETE FROM lemon_scores WHERE as_of = $as_of;
INSERT INTO lemon_scores BY NAME SELECT * FROM staged_lemon_scores;
