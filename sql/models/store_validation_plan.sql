-- validation_plan for one as_of (staged_validation_plan), replacing that as_of's rows.
DELETE FROM validation_plan WHERE as_of = $as_of;
INSERT INTO validation_plan BY NAME SELECT * FROM staged_validation_plan;
