SELECT path, size_bytes, epoch(ingested_at) FROM ingested_files
