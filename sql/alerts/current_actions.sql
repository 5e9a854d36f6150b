-- The node actions of the latest as-of (node_actions, sql/models/store_node_actions.sql): what the alerts compare
-- with the decisions before them (analysis/alerts/alertmanager.py).
SELECT host, as_of, action, cause, score, reason FROM node_actions
WHERE as_of = (SELECT max(as_of) FROM node_actions) ORDER BY host
