-- Files of a source ingested at or after $since (the files of this run; datetime.min: all of them) whose line
-- accounting does not hold, either in the counts recorded at ingest or against the rows and rejects actually
-- stored. Each raw table is read for the run's files only (analysis/sql.py writes the line once per table):
-- the check costs the run's files, not the whole history.
WITH run_files AS (
    SELECT * FROM ingested_files WHERE source = $source AND status = 'ok' AND ingested_at >= $since
), stored AS (
    SELECT file, count(DISTINCT line_no) AS n FROM (
        UNION ALL SELECT file, line_no FROM {raw_table} WHERE file IN (SELECT path FROM run_files)
    )
    GROUP BY file
), rejected AS (
    SELECT file, count(DISTINCT line_no) AS n FROM rejects
    WHERE line_no IS NOT NULL AND file IN (SELECT path FROM run_files) GROUP BY file
)
SELECT f.path, f.lines, f.row_lines, f.rejects, f.skipped, f.merged,
       coalesce(s.n, 0) AS stored_lines, coalesce(r.n, 0) AS rejected_lines
FROM run_files f
LEFT JOIN stored s ON s.file = f.path
LEFT JOIN rejected r ON r.file = f.path
WHERE f.lines <> f.row_lines + f.rejects + f.skipped + f.merged
   OR coalesce(s.n, 0) <> f.row_lines OR coalesce(r.n, 0) <> f.rejects
ORDER BY f.path
