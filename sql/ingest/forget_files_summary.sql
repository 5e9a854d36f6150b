-- What forgetting the files in staged_files(path) removes, as recorded at ingest.
SELECT path, source, status, rows, rejects FROM ingested_files
WHERE path IN (SELECT path FROM staged_files) ORDER BY path
