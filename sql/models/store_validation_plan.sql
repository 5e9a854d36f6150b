-- validation_plan for one as_of (staged_validation_plan), replacing that as_of's rows.
CREATE TABLE IF NOT EXISTS validation_plan (
    host VARCHAR, as_of TIMESTAMP, step INTEGER, benchmark VARCHAR, duration_min DOUBLE,
    p_before DOUBLE, p_after DOUBLE, reduction DOUBLE
);
DELETE FROM validation_plan WHERE as_of = $as_of;
INSERT INTO validation_plan BY NAME SELECT * FROM staged_validation_plan;
