-- The files ingested since $since with the most rejects, and the most frequent
-- reason in each: what an operator opens first when the reject rate is too high.
WITH top AS (
    SELECT path, lines, rejects FROM ingested_files
    WHERE status = 'ok' AND ingested_at >= $since AND rejects > 0
    ORDER BY rejects DESC, path LIMIT $limit
), reasons AS (
    SELECT r.file, r.reason, count(*) AS n FROM rejects r JOIN top t ON r.file = t.path GROUP BY ALL
)
SELECT t.path, t.lines, t.rejects,
       (SELECT arg_max(x.reason, (x.n, x.reason)) FROM reasons x WHERE x.file = t.path) AS reason
FROM top t
ORDER BY t.rejects DESC, t.path
