-- The folders of $sources (analysis.sources.JOBS_FROM: slurm, kubernetes) whose files gave rows: which scheduler's
-- jobs the warehouse holds, so that exports and the report speak that scheduler's words (exports.platform_of).
SELECT DISTINCT source FROM ingested_files WHERE list_contains($sources, source) AND rows > 0 ORDER BY source
