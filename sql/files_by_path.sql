-- file_by_path for many files at once: the ingested_files rows of the paths in staged_paths(path).
SELECT path, sha256, fingerprint, status, size_bytes, mtime_ns, coalesce(verified_at, ingested_at) AS verified_at
FROM ingested_files WHERE path IN (SELECT path FROM staged_paths)
