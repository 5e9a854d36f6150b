-- An empty stand-in (TEMP, this connection) for node_outages on a warehouse whose node_incidents step has not
-- run since it was added (sql/derive/build_node_outages.sql makes the real one): the node models read it.
CREATE TEMP TABLE node_outages (
    outage_id VARCHAR, host VARCHAR, time_start TIMESTAMP, time_end TIMESTAMP, still_out BOOLEAN, hours DOUBLE,
    state VARCHAR, reason VARCHAR, reason_rule VARCHAR, reason_cause VARCHAR, cause VARCHAR, planned BOOLEAN,
    incident_id VARCHAR, ticket_id VARCHAR, periods BIGINT, first_record VARCHAR);
