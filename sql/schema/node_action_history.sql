-- node_action_history: every as-of's node actions (analysis/nodes/exports.py build_node_actions), kept: the
-- decisions goodput took over time, so the node lifecycle and the alerts can tell a new decision from one that
-- stands. node_actions holds only the latest as-of's.
CREATE TABLE IF NOT EXISTS node_action_history (
    as_of TIMESTAMP, host VARCHAR, action VARCHAR, score DOUBLE, cause VARCHAR, reason VARCHAR, built_at TIMESTAMP
);
