-- The nodes drain.sh may resume: out of service in an outage goodput drained (its reason tag), repaired and
-- validated since, nothing after (node_lifecycle_now); the script resumes them only if Slurm still shows
-- goodput's reason (analysis/nodes/exports.py).
SELECT host, evidence, since FROM node_lifecycle_now
WHERE state = 'validated' AND by_goodput AND still_out
ORDER BY host
