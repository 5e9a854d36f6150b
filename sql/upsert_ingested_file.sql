INSERT OR REPLACE INTO ingested_files
    (path, source, format, sha256, host_hint, fingerprint, size_bytes, lines, row_lines, rows, rejects, skipped,
     merged, status, message, ingested_at)
VALUES ($path, $source, $format, $sha256, $host_hint, $fingerprint, $size_bytes, $lines, $row_lines, $rows,
        $rejects, $skipped, $merged, $status, $message, $ingested_at);
