-- The fleet's node size: the GPUs most nodes have (node_gpus), for GPUs -> nodes in r, MTTF and ETTR.
SELECT coalesce(mode(gpus), 8) FROM node_gpus
