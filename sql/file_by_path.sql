SELECT path, sha256, fingerprint, status FROM ingested_files WHERE path = $path
