-- Nodes by their GPUs (node_gpus), most common first: what the capacity is made of.
SELECT gpus, count(*) AS nodes FROM node_gpus GROUP BY gpus ORDER BY nodes DESC, gpus DESC
