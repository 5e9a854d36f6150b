-- Rejected lines over all lines of the files ingested since $since (the
-- input that just arrived: an old bad file must not block every night).
SELECT coalesce(sum(rejects), 0) AS rejects, coalesce(sum(lines), 0) AS lines,
       coalesce(sum(rejects), 0) / greatest(coalesce(sum(lines), 0), 1) AS rate
FROM ingested_files WHERE status = 'ok' AND ingested_at >= $since
