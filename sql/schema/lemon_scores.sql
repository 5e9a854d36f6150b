-- Each node's lemon score per as_of (analysis.nodes.lemon_scoring); the node actions read it, and create it empty
-- when no lemon scoring ran.
CREATE TABLE IF NOT EXISTS lemon_scores (
    host VARCHAR, as_of TIMESTAMP, score DOUBLE, is_lemon BOOLEAN, top_signals VARCHAR[],
    suggested_component VARCHAR, method VARCHAR, meta_is_lemon BOOLEAN, meta_signals VARCHAR[]
);
