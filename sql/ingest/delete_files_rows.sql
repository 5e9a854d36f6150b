-- Remove everything the files in staged_files(path) contributed, before they are re-ingested (every raw table
-- of the source registry: analysis/sql.py writes the line once per table).
DELETE FROM {raw_table} WHERE file IN (SELECT path FROM staged_files);
DELETE FROM rejects WHERE file IN (SELECT path FROM staged_files);
