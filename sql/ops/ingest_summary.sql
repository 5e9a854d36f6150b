-- Per source: files by status, lines, rows and rejects currently stored, and
-- what this run added (files ingested at or after $since).
SELECT coalesce(source, '(unknown folder)') AS source,
       count(*) AS files,
       count(*) FILTER (WHERE status = 'ok' AND ingested_at >= $since) AS read_this_run,
       count(*) FILTER (WHERE status = 'duplicate') AS duplicates,
       count(*) FILTER (WHERE status IN ('unrecognised', 'error')) AS problems,
       sum(lines) AS lines, sum(rows) AS rows, sum(rejects) AS rejects
FROM ingested_files
GROUP BY ALL
ORDER BY source
