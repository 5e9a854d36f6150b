-- detector_evaluation of the latest detection run (the table: sql/schema/detector_evaluation.sql).
DELETE FROM detector_evaluation;
INSERT INTO detector_evaluation BY NAME SELECT * FROM staged_evaluation;
