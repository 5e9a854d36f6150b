SELECT path FROM ingested_files WHERE sha256 = $sha256 AND path <> $path AND status = 'ok' ORDER BY path LIMIT 1
