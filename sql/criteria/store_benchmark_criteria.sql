-- One criteria run (analysis.criteria.run): the criteria of version $version,
-- the verdicts of the runs it judged (replacing those runs' earlier verdicts),
-- each node's standing over the window, and the evaluation against baselines (the tables: sql/schema/).
DELETE FROM benchmark_criteria WHERE version = $version;
INSERT INTO benchmark_criteria BY NAME SELECT * FROM staged_criteria;
DELETE FROM benchmark_verdicts WHERE run_id IN (SELECT DISTINCT run_id FROM staged_verdicts);
INSERT INTO benchmark_verdicts BY NAME SELECT * FROM staged_verdicts;
CREATE OR REPLACE TABLE benchmark_nodes AS SELECT * FROM staged_nodes;
DELETE FROM criteria_evaluation WHERE version = $version;
INSERT INTO criteria_evaluation BY NAME SELECT * FROM staged_evaluation;
