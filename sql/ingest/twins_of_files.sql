-- file_by_sha for many files at once: for each staged_twins(path, sha256, source, host_hint, fingerprint),
-- the first other file ingested with the same content, source, host and read options.
SELECT s.path, min(f.path) AS twin
FROM staged_twins s
JOIN ingested_files f ON f.sha256 = s.sha256 AND f.path <> s.path AND f.status = 'ok' AND f.source = s.source
 AND f.host_hint IS NOT DISTINCT FROM s.host_hint AND f.fingerprint = s.fingerprint
GROUP BY s.path
