-- The newest as-of node actions were built for (NULL: none yet).
SELECT max(as_of) FROM node_action_history
