-- sacct files read since $since whose rows are all job steps (123.batch,
-- 123.0): without an allocation line no job is built from them.
SELECT f.path, f.row_lines
FROM ingested_files f
WHERE f.source = 'slurm' AND f.status = 'ok' AND f.ingested_at >= $since AND f.row_lines > 0
  AND NOT EXISTS (SELECT 1 FROM sacct_records r WHERE r.file = f.path AND r.step_id IS NULL)
ORDER BY f.path
