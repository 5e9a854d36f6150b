-- detector_evaluation of the latest detection run (see store_machine_alerts.sql for the table).
DELETE FROM detector_evaluation;
INSERT INTO detector_evaluation BY NAME SELECT * FROM staged_evaluation;
