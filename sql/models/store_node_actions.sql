-- node_actions: the staged node actions of the latest as-of (analysis/nodes/exports.py: an older as-of, a
-- backtest, goes to node_action_history only and never replaces the decisions the exports read).
CREATE OR REPLACE TABLE node_actions AS SELECT * FROM staged_node_actions ORDER BY action, host;
