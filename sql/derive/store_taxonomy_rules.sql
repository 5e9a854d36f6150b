-- The rules in force for this run (shipped taxonomy + operator overrides), queryable.
CREATE OR REPLACE TABLE taxonomy_rules AS SELECT * FROM staged_rules;
