-- Every covered job's telemetry in one pass, sorted by job: each job's rows are then read from a
-- contiguous run of this table (DuckDB skips the rest by its zone maps) instead of a scan of the
-- whole telemetry table per job. Temporary: gone with the connection.
CREATE OR REPLACE TEMP TABLE job_telemetry AS
WITH spans AS (
    SELECT job_id, instance, telemetry_from, telemetry_to, unnest(hosts) AS host FROM staged_telemetry_jobs
)
SELECT s.job_id, s.instance, t.time, t.host, t.metric, t.value
FROM spans s JOIN telemetry t ON t.host = s.host AND t.time >= s.telemetry_from AND t.time <= s.telemetry_to
WHERE NOT (starts_with(t.metric, 'node_infiniband_') AND contains(t.metric, '_total'))  -- port counters: analysis/network
ORDER BY s.job_id, s.instance, t.time
