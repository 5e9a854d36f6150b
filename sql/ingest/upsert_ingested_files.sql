INSERT OR REPLACE INTO ingested_files BY NAME
SELECT path, source, format, sha256, host_hint, fingerprint, size_bytes, mtime_ns, lines, row_lines, rows, rejects,
       skipped, merged, status, message, ingested_at, ingested_at AS verified_at
FROM staged_files;
