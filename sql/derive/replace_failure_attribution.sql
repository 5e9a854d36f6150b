-- failure_attribution: every instance judged (staged_failure_attribution), the table replaced.
CREATE OR REPLACE TABLE failure_attribution AS SELECT * FROM staged_failure_attribution;
DROP TABLE staged_failure_attribution;
