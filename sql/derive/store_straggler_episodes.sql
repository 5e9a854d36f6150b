-- straggler_episodes: each worker slower than its peers at the same step for a while (analysis/derive/stragglers.py):
-- job, instance, host, ranks, start and end, keys (steps, or telemetry buckets), slowdown (median ratio to the
-- peers' median), cost_seconds (the training time the job lost waiting for it), kind (persistent, transient,
-- placement), concurrent (other workers straggling at the same time), source, origin (node, job, undetermined)
-- and why. Replaced whole each build.
CREATE OR REPLACE TABLE straggler_episodes AS SELECT * FROM staged_episodes ORDER BY job_id, instance, start_time, host
