-- node_gpus: each node's GPUs, learned from the allocations (a node is 8 GPUs unless its TRES says
-- otherwise): multi-node jobs take whole nodes, so the most common GPUs per node among them is the
-- fleet's node size (among all jobs when none spans nodes; 8 when no job holds a GPU); a node given
-- more GPUs than that by some job has at least those.
CREATE OR REPLACE TABLE node_gpus AS
WITH alloc AS (
    SELECT unnest(nodes) AS host, ceil(n_gpus / n_nodes)::INTEGER AS per_node, n_nodes > 1 AS multi
    FROM jobs WHERE n_gpus > 0 AND n_nodes > 0
), fleet AS (
    SELECT coalesce(mode(per_node) FILTER (WHERE multi), mode(per_node), 8) AS gpus FROM alloc
), hosts AS (
    SELECT host FROM topology WHERE host IS NOT NULL UNION SELECT unnest(nodes) FROM jobs
)
SELECT h.host, greatest(any_value(f.gpus), coalesce(max(a.per_node), 0))::INTEGER AS gpus,
       CASE WHEN max(a.per_node) > any_value(f.gpus) THEN 'allocated on this node' ELSE 'fleet node size' END AS basis
FROM hosts h CROSS JOIN fleet f LEFT JOIN alloc a USING (host)
GROUP BY h.host ORDER BY h.host;
