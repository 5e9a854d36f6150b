-- Sources whose files ingested since $since (the input that just arrived) had more than $limit of their
-- lines rejected, and at least $min_rejects of them (one odd line in a small source is not a broken feed),
-- with the most frequent reason.
WITH recent AS (
    SELECT source, path, lines, rejects FROM ingested_files
    WHERE status = 'ok' AND source IS NOT NULL AND ingested_at >= $since
), rates AS (
    SELECT source, sum(rejects) AS rejects, sum(lines) AS lines FROM recent GROUP BY source
    HAVING sum(rejects) > $limit * greatest(sum(lines), 1) AND sum(rejects) >= $min_rejects
), reasons AS (
    SELECT x.source, r.reason, count(*) AS n FROM rejects r JOIN recent x ON r.file = x.path
    WHERE x.source IN (SELECT source FROM rates) GROUP BY ALL
)
SELECT t.source, t.rejects, t.lines, t.rejects / greatest(t.lines, 1) AS rate,
       (SELECT arg_max(reason, (n, reason)) FROM reasons r WHERE r.source = t.source) AS reason
FROM rates t ORDER BY t.source
