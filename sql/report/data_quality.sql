SELECT coalesce(source, '(unknown folder)') AS source, count(*) AS files,
       count(*) FILTER (WHERE status IN ('unrecognised', 'error')) AS problem_files,
       sum(lines) AS lines, sum(rows) AS rows, sum(rejects) AS rejects
FROM ingested_files GROUP BY ALL ORDER BY source
