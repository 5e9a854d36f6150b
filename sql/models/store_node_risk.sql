-- node_risk for one as_of (staged_node_risk), replacing that as_of's rows.
CREATE TABLE IF NOT EXISTS node_risk (
    host VARCHAR, as_of TIMESTAMP, horizon_days INTEGER, p_incident DOUBLE, expected_days_to_incident DOUBLE, model VARCHAR
);
DELETE FROM node_risk WHERE as_of = $as_of;
INSERT INTO node_risk BY NAME SELECT * FROM staged_node_risk;
