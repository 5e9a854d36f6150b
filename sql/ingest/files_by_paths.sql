-- The ingested_files rows of the files in staged_stats(path, size_bytes, mtime_ns, fingerprint), one query for a
-- run's files rather than one per file (sql/ingest/file_by_path.sql). Whether each is unchanged since it was read
-- is decided by analysis/ingest/one_file.unchanged_since_read, the one home of that rule.
SELECT f.path, f.sha256, f.fingerprint, f.status, f.size_bytes, f.mtime_ns,
       coalesce(f.verified_at, f.ingested_at) AS verified_at
FROM staged_stats s JOIN ingested_files f ON f.path = s.path
