-- How many of staged_files(path) were ingested before (only those can have rows to delete).
SELECT count(*) FROM ingested_files WHERE path IN (SELECT path FROM staged_files)
