-- Files of a source in which every line that was not blank or a header was
-- rejected: the source is unreadable as configured (a wrong delimiter, a wrong
-- time zone name, a format we do not read). With the most frequent reject
-- reason, which names the fix (e.g. "write gpu001.dmesg.boottime").
WITH bad AS (
    SELECT path, lines, rejects FROM ingested_files
    WHERE source = $source AND status = 'ok' AND row_lines = 0 AND rejects > 0
), reasons AS (
    SELECT r.file, r.reason, count(*) AS n FROM rejects r JOIN bad b ON r.file = b.path GROUP BY ALL
)
SELECT b.path, b.lines, b.rejects,
       (SELECT arg_max(x.reason, (x.n, x.reason)) FROM reasons x WHERE x.file = b.path) AS reason
FROM bad b
ORDER BY b.path
