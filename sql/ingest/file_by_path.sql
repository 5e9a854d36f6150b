SELECT path, sha256, fingerprint, status, size_bytes, mtime_ns, coalesce(verified_at, ingested_at) AS verified_at
FROM ingested_files WHERE path = $path
