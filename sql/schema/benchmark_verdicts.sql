-- Each node's verdict per validation run and metric (analysis.criteria.run); the lemon features and the node
-- actions read it, and create it empty when no criteria ran yet.
CREATE TABLE IF NOT EXISTS benchmark_verdicts (
    run_id VARCHAR, run_time TIMESTAMP, host VARCHAR, "group" VARCHAR, benchmark VARCHAR, metric VARCHAR,
    rank INTEGER, similarity DOUBLE, value DOUBLE, verdict VARCHAR, reason VARCHAR, version VARCHAR
);
