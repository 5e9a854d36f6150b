-- Each node's incident probability per as_of and horizon (analysis.nodes.incident_model); the node actions read it,
-- and create it empty when the model never ran.
CREATE TABLE IF NOT EXISTS node_risk (
    host VARCHAR, as_of TIMESTAMP, horizon_days INTEGER, p_incident DOUBLE, expected_days_to_incident DOUBLE, model VARCHAR
);
