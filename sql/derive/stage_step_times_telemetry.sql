-- Step times from telemetry (TEMP step_times_staged, this connection): series whose metric is named like a
-- step or iteration time (iteration_time_seconds, train_step_time_ms, ...; `_ms`/millisecond series
-- divided by 1,000), on the nodes of each job of $min_workers or more nodes while it ran, averaged per
-- worker (with its place in the job's node list) over buckets of $bucket_s seconds from the job's start
-- (key: the bucket's index, time its start).
CREATE OR REPLACE TEMP TABLE step_times_staged AS
WITH metrics AS (
    SELECT metric, CASE WHEN regexp_matches(lower(metric), '(_ms\b|_ms$|millis)') THEN 0.001 ELSE 1.0 END AS scale
    FROM telemetry_metrics  -- sql/derive/stage_telemetry_metrics.sql
    WHERE regexp_matches(lower(metric), '(step|iteration|iter|batch)[_ ]?(time|duration|seconds|latency)')
), series AS (
    SELECT t.time, t.host, t.value * m.scale AS seconds
    FROM telemetry t JOIN metrics m USING (metric)
    WHERE t.value > 0 AND t.host IS NOT NULL
), job_nodes AS (
    SELECT job_id, instance, start_time, coalesce(end_time, 'infinity'::TIMESTAMP) AS end_time, unnest(nodes) AS host,
           generate_subscripts(nodes, 1) AS position
    FROM jobs WHERE start_time IS NOT NULL AND len(nodes) >= $min_workers
), bucketed AS (
    SELECT j.job_id, j.instance, s.host, j.position, floor(date_diff('microsecond', j.start_time, s.time) / (1e6 * $bucket_s))::BIGINT AS key,
           j.start_time, s.seconds
    FROM job_nodes j JOIN series s ON s.host = j.host AND s.time >= j.start_time AND s.time < j.end_time
)
SELECT job_id, instance::BIGINT AS instance, host, NULL::BIGINT AS rank, key,
       start_time + to_seconds(key * $bucket_s) AS time, avg(seconds) AS step_seconds,
       $bucket_s::DOUBLE AS bucket_s, 'telemetry' AS source, position::BIGINT AS position
FROM bucketed GROUP BY job_id, instance, host, key, start_time, position
