-- Files read since $since whose rows took their host from the file's name or
-- folder (host_hint), when that host is no node Slurm knows: a file named
-- export.log under kernel/ invents a host 'export' whose events attach to no job.
-- Slurm's nodes: those of job allocations and of node state changes.
-- Empty without sacct allocations: node events alone name too few nodes to compare with.
WITH run_files AS (
    SELECT path, source, host_hint FROM ingested_files
    WHERE status = 'ok' AND ingested_at >= $since AND host_hint IS NOT NULL AND rows > 0
), used AS (
    SELECT DISTINCT e.file FROM node_events e JOIN run_files f ON e.file = f.path AND e.host = f.host_hint
    UNION SELECT DISTINCT t.file FROM telemetry t JOIN run_files f ON t.file = f.path AND t.host = f.host_hint
    UNION SELECT DISTINCT b.file FROM benchmark_results b JOIN run_files f ON b.file = f.path AND b.host = f.host_hint
), slurm_hosts AS (
    SELECT DISTINCT unnest(nodes) AS host FROM sacct_records WHERE step_id IS NULL
    UNION SELECT DISTINCT host FROM node_states
)
SELECT f.source, f.path, f.host_hint
FROM run_files f
WHERE f.path IN (SELECT file FROM used)
  AND f.host_hint NOT IN (SELECT host FROM slurm_hosts WHERE host IS NOT NULL)
  AND EXISTS (SELECT 1 FROM sacct_records WHERE step_id IS NULL AND len(nodes) > 0)
ORDER BY f.source, f.path
