-- The ingested_files rows of the files in staged_stats(path, size_bytes, mtime_ns, fingerprint), one query for a
-- run's files rather than one per file (sql/ingest/file_by_path.sql). unchanged: the file has the size, modification
-- time and read options it had when last read, and was last read more than a second after that modification
-- time (as in git's "racy clean" rule, a file modified within a second of its reading may have been rewritten in
-- the same clock tick): it is not read again.
SELECT f.path, f.sha256, f.fingerprint, f.status, f.size_bytes, f.mtime_ns,
       coalesce(f.verified_at, f.ingested_at) AS verified_at,
       f.status <> 'error' AND f.size_bytes = s.size_bytes AND f.mtime_ns = s.mtime_ns
         AND f.fingerprint = s.fingerprint
         AND s.mtime_ns < epoch_ns(coalesce(f.verified_at, f.ingested_at)) - 1000000000 AS unchanged
FROM staged_stats s JOIN ingested_files f ON f.path = s.path
