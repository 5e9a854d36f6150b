-- Hostlists that jobs excluded, one row per (job, expression): `--exclude=X`,
-- `--exclude X`, `-x X` or `-xX` in SubmitLine (sbatch, srun and salloc spell
-- it alike). Quotes around the list are dropped; the expansion is Python's.
-- Only jobs first submitted at or after $since (NULL: all): the lemon windows start there, and the submit lines
-- of every job ever run were most of a nightly's lemon features.
WITH recent AS (
    SELECT DISTINCT job_id FROM jobs WHERE $since IS NULL OR submit_time >= $since
), submitted AS (
    SELECT job_id, min(submit_time) AS submit_time, any_value(submit_line) AS submit_line
    FROM jobs WHERE (submit_line LIKE '%-x%' OR submit_line LIKE '%--exclude%')
                AND ($since IS NULL OR job_id IN (SELECT job_id FROM recent))
    GROUP BY job_id
)
SELECT DISTINCT job_id, submit_time,
       trim(unnest(regexp_extract_all(submit_line, '(?:^|\s)(?:--exclude(?:=|\s+)|-x\s*)(\S+)', 1)), '''"') AS expr
FROM submitted
WHERE submit_time IS NOT NULL AND ($since IS NULL OR submit_time >= $since)
