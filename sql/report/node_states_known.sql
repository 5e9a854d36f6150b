-- Whether a warehouse knows its nodes' drained, down or cordoned states at all: Slurm's node events
-- (slurm_events/) were read, or Kubernetes Events about Nodes (the kubelet's NodeNotSchedulable/NodeReady, which
-- k8s_node_states reads). Without either, a count of drained nodes would be a guess of 0.
SELECT EXISTS (SELECT 1 FROM ingested_files WHERE source = 'slurm_events' AND rows > 0)
       OR EXISTS (SELECT 1 FROM k8s_objects WHERE kind = 'Event' AND involved_kind = 'Node') AS known
