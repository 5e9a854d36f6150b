-- Files recorded as copies (status duplicate, no rows of their own) of the
-- files in staged_files: with the original forgotten, the next run reads them.
SELECT DISTINCT d.path FROM ingested_files d
JOIN ingested_files o ON o.path IN (SELECT path FROM staged_files)
     AND o.sha256 = d.sha256 AND o.source = d.source
     AND o.host_hint IS NOT DISTINCT FROM d.host_hint AND o.fingerprint = d.fingerprint
WHERE d.status = 'duplicate' AND d.path NOT IN (SELECT path FROM staged_files)
ORDER BY d.path
