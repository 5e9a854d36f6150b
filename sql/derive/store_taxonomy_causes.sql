-- The causes in force for this run (shipped taxonomy + operator overrides): label, domain, component,
-- family, planned. The interruption table and the availability views group by them.
CREATE OR REPLACE TABLE taxonomy_causes AS SELECT * FROM staged_causes;
