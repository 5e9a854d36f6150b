-- Nodes drained or down at the end of $day, with the state and reason Slurm recorded.
SELECT host, state, reason FROM nodes_out_of_service($day) ORDER BY host
