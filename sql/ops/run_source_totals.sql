-- Per source: files recorded and the rows they hold, over the whole warehouse
-- (a nightly run with no new file is not an empty run).
SELECT source, count(*) AS files, coalesce(sum(rows), 0)::BIGINT AS rows
FROM ingested_files WHERE source IS NOT NULL
GROUP BY source ORDER BY source
