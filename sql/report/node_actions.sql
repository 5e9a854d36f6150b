-- What the blocklist would do: every node with an action, the strongest first. score: the action score (the number
-- drain.sh, blocklist.json and `goodput why` show; docs/methods.md#node-actions). lemon_score: the node's
-- lemon_scores.score at the actions' as_of (the lemon table's number; NULL: the node was not scored);
-- p_incident_7d: Cox-Time's 7-day incident probability (node_risk), when it could be trained. as_of: for
-- the nodes Slurm already has drained (analysis/nodes/exports.py with_slurm, as drain.sh has them).
SELECT a.host, a.action, a.reason, a.cause, a.score, a.suggested_component, l.score AS lemon_score, k.p_incident AS p_incident_7d, a.since, a.expires, a.as_of
FROM node_actions a
LEFT JOIN lemon_scores l ON l.host = a.host AND l.as_of = a.as_of
LEFT JOIN node_risk k ON k.host = a.host AND k.as_of = a.as_of AND k.horizon_days = 7 AND k.model = 'cox_time'
ORDER BY CASE a.action WHEN 'drain_now' THEN 0 WHEN 'drain_after_job' THEN 1 ELSE 2 END, a.score DESC, a.host
