-- straggler_episodes: each worker slower than its peers at the same step for a while (analysis/derive/stragglers.py):
-- job, instance, host, ranks, start and end, keys (steps, or telemetry buckets), slowdown (median ratio to the
-- peers' pace), cost_seconds (the training time the job lost waiting for it), kind (persistent, transient,
-- placement), concurrent (other workers straggling at the same time), source, position (the host's place in the
-- job's node list), origin (node, job, undetermined), basis (moves, repeat, during, once) and why. Replaced
-- whole each build; so are its node events: one per episode of origin node (source straggler, kind straggler,
-- code its kind, the job's id; file goodput:stragglers/<job>/<instance>), for the taxonomy (degraded_pace),
-- node history and incidents; failure attribution never blames them (a slow node ended no job).
CREATE OR REPLACE TABLE straggler_episodes AS SELECT * FROM staged_episodes ORDER BY job_id, instance, start_time, host;
DELETE FROM node_events WHERE source = 'straggler';
INSERT INTO node_events BY NAME
SELECT start_time AS event_time, host, 'straggler' AS source, 'straggler' AS kind, kind AS code,
       'warning' AS severity,
       format('{:.2f}x slower than its peers for {} min in job {} (instance {}): {}', slowdown,
              round(date_diff('second', start_time, end_time) / 60.0)::BIGINT, job_id, instance, why) AS message,
       CASE WHEN len(ranks) > 0 THEN 'rank ' || array_to_string(ranks, ',') END AS device, 'goodput' AS reporter,
       'goodput:stragglers/' || job_id || '/' || instance AS file,
       row_number() OVER (PARTITION BY job_id, instance ORDER BY start_time, host) AS line_no, job_id
FROM staged_episodes WHERE origin = 'node';
