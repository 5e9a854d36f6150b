SELECT coalesce(sum(rejects), 0) AS rejects, coalesce(sum(lines), 0) AS lines,
       coalesce(sum(rejects), 0) / greatest(coalesce(sum(lines), 0), 1) AS rate
FROM ingested_files WHERE status = 'ok'
