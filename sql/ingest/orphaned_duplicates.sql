-- Duplicates whose original no longer holds the same content.
SELECT d.path FROM ingested_files d
WHERE d.status = 'duplicate'
  AND NOT EXISTS (SELECT 1 FROM ingested_files o
                  WHERE o.status = 'ok' AND o.sha256 = d.sha256 AND o.source = d.source
                    AND o.host_hint IS NOT DISTINCT FROM d.host_hint AND o.fingerprint = d.fingerprint)
ORDER BY d.path
