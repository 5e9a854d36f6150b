SELECT path, source, status, message FROM ingested_files
WHERE status IN ('unrecognised', 'error') ORDER BY path
