-- `goodput forget`, after delete_files_rows: drop the ingested_files records
-- of the files in staged_files(path), so nothing says they were read.
DELETE FROM ingested_files WHERE path IN (SELECT path FROM staged_files);
