-- `goodput why HOST`: the node's lifecycle steps (node_lifecycle), oldest first, the last $limit.
SELECT step, step_time, state, source, evidence, component FROM node_lifecycle WHERE host = $host
QUALIFY row_number() OVER (ORDER BY step DESC) <= $limit
ORDER BY step
