-- Files of a source whose line accounting does not hold, either in the counts
-- recorded at ingest or against the rows and rejects actually stored.
WITH stored AS (
    SELECT file, count(DISTINCT line_no) AS n FROM (
        SELECT file, line_no FROM sacct_records UNION ALL SELECT file, line_no FROM node_state_periods
        UNION ALL SELECT file, line_no FROM node_events UNION ALL SELECT file, line_no FROM benchmark_results
        UNION ALL SELECT file, line_no FROM telemetry UNION ALL SELECT file, line_no FROM tickets
        UNION ALL SELECT file, line_no FROM topology UNION ALL SELECT file, line_no FROM job_log_lines
        UNION ALL SELECT file, line_no FROM host_addresses)
    GROUP BY file
), rejected AS (
    SELECT file, count(DISTINCT line_no) AS n FROM rejects WHERE line_no IS NOT NULL GROUP BY file
)
SELECT f.path, f.lines, f.row_lines, f.rejects, f.skipped, f.merged,
       coalesce(s.n, 0) AS stored_lines, coalesce(r.n, 0) AS rejected_lines
FROM ingested_files f
LEFT JOIN stored s ON s.file = f.path
LEFT JOIN rejected r ON r.file = f.path
WHERE f.source = $source AND f.status = 'ok'
  AND (f.lines <> f.row_lines + f.rejects + f.skipped + f.merged
       OR coalesce(s.n, 0) <> f.row_lines OR coalesce(r.n, 0) <> f.rejects)
