-- Files of the sources $sources read with rows (status ok) ingested at or before $through (NULL: all of
-- them), and the newest ingested_at among them. A count below a build's mark: a file was re-read or forgotten.
SELECT count(*) AS files, max(ingested_at) AS through FROM ingested_files
WHERE list_contains($sources, source) AND status = 'ok' AND ($through IS NULL OR ingested_at <= $through)
