-- Declared here for the node models on a warehouse whose node_incidents step has not run since they were
-- added (sql/derive/build_node_outages.sql and store_taxonomy_causes.sql fill them).
CREATE TABLE IF NOT EXISTS node_outages (
    outage_id VARCHAR, host VARCHAR, time_start TIMESTAMP, time_end TIMESTAMP, still_out BOOLEAN, hours DOUBLE,
    state VARCHAR, reason VARCHAR, reason_rule VARCHAR, reason_cause VARCHAR, cause VARCHAR, planned BOOLEAN,
    incident_id VARCHAR, ticket_id VARCHAR, periods BIGINT, first_record VARCHAR);
CREATE TABLE IF NOT EXISTS taxonomy_causes (
    cause VARCHAR, label VARCHAR, domain VARCHAR, component VARCHAR, family VARCHAR, planned BOOLEAN, description VARCHAR);
