-- This as-of's node actions (TEMP staged_node_actions) into node_action_history, replacing a rebuild of the same as-of.
DELETE FROM node_action_history WHERE as_of = $as_of;
INSERT INTO node_action_history
SELECT as_of, host, action, score, cause, reason, now()::TIMESTAMP FROM staged_node_actions ORDER BY host;
