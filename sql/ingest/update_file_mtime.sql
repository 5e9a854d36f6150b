-- A file touched but not changed: remember its mtime so the next run skips it without reading it.
UPDATE ingested_files SET mtime_ns = $mtime_ns, verified_at = $verified_at WHERE path = $path;
