-- Files of the sources $sources read with rows (status ok) ingested after $through: new ones, or re-read.
SELECT count(*) FROM ingested_files
WHERE list_contains($sources, source) AND status = 'ok' AND ingested_at > $through
