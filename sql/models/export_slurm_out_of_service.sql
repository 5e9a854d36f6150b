-- Nodes Slurm has drained or down as far as the warehouse knows (node_states, from `sacctmgr show
-- event`): those out of service at the end of the later of the day before $as_of and the day of the last
-- node state change, by the report's rule (nodes_out_of_service), with the state and reason Slurm recorded
-- last. drain.sh leaves them alone, so an operator's or a health check's reason is kept (analysis/nodes/exports.py).
SELECT host, state, reason
FROM nodes_out_of_service((SELECT greatest($as_of - INTERVAL 1 DAY, max(time_start), max(time_end))::DATE
                           FROM node_states))
ORDER BY host
