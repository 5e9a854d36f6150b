SELECT path, source, format, status, message, lines, rows, rejects FROM ingested_files
