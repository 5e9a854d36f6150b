-- Nodes per action at the latest as-of, and that as-of (the metrics file's node actions).
SELECT action, count(*) AS nodes, max(as_of) AS as_of FROM node_actions
WHERE as_of = (SELECT max(as_of) FROM node_actions) GROUP BY action ORDER BY action
