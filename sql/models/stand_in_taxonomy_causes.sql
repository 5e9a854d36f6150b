-- An empty stand-in (TEMP, this connection) for taxonomy_causes on a warehouse whose classified_events step has
-- not run since it was added (sql/derive/store_taxonomy_causes.sql makes the real one).
CREATE TEMP TABLE taxonomy_causes (
    cause VARCHAR, label VARCHAR, domain VARCHAR, component VARCHAR, family VARCHAR, planned BOOLEAN, description VARCHAR);
