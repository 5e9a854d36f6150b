SELECT path FROM ingested_files
WHERE sha256 = $sha256 AND path <> $path AND status = 'ok' AND source = $source
  AND host_hint IS NOT DISTINCT FROM $host_hint AND fingerprint = $fingerprint
ORDER BY path LIMIT 1
