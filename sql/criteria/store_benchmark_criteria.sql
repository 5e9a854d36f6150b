-- One criteria run (analysis.criteria.run): the criteria of version $version,
-- the verdicts of the runs it judged (replacing those runs' earlier verdicts),
-- each node's standing over the window, and the evaluation against baselines.
CREATE TABLE IF NOT EXISTS benchmark_criteria (
    version VARCHAR, trained_from TIMESTAMP, trained_to TIMESTAMP, "group" VARCHAR, benchmark VARCHAR, metric VARCHAR,
    kind VARCHAR, direction VARCHAR, unit VARCHAR, guessed_direction BOOLEAN, status VARCHAR, reason VARCHAR,
    criterion DOUBLE[], criterion_value DOUBLE, alpha DOUBLE, threshold DOUBLE, pass_value DOUBLE,
    n_samples BIGINT, n_hosts BIGINT, n_dropped BIGINT, repeatability DOUBLE, sigma DOUBLE
);
CREATE TABLE IF NOT EXISTS benchmark_verdicts (
    run_id VARCHAR, run_time TIMESTAMP, host VARCHAR, "group" VARCHAR, benchmark VARCHAR, metric VARCHAR,
    rank INTEGER, similarity DOUBLE, value DOUBLE, verdict VARCHAR, reason VARCHAR, version VARCHAR
);
CREATE TABLE IF NOT EXISTS criteria_evaluation (
    version VARCHAR, "group" VARCHAR, benchmark VARCHAR, measured BIGINT, metrics BIGINT, repeatability DOUBLE, samples BIGINT,
    flagged_alg2 BIGINT, flagged_iqr BIGINT, flagged_kmeans BIGINT,
    margin_alg2 DOUBLE, margin_iqr DOUBLE, margin_kmeans DOUBLE,
    margin_metrics_alg2 BIGINT, margin_metrics_iqr BIGINT, margin_metrics_kmeans BIGINT
);
DELETE FROM benchmark_criteria WHERE version = $version;
INSERT INTO benchmark_criteria BY NAME SELECT * FROM staged_criteria;
DELETE FROM benchmark_verdicts WHERE run_id IN (SELECT DISTINCT run_id FROM staged_verdicts);
INSERT INTO benchmark_verdicts BY NAME SELECT * FROM staged_verdicts;
CREATE OR REPLACE TABLE benchmark_nodes AS SELECT * FROM staged_nodes;
DELETE FROM criteria_evaluation WHERE version = $version;
INSERT INTO criteria_evaluation BY NAME SELECT * FROM staged_evaluation;
