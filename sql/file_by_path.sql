SELECT path, sha256, status FROM ingested_files WHERE path = $path
