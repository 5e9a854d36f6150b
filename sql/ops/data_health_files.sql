-- Per source folder, the files it holds that gave nothing usable: every line rejected, no parser reads
-- the file, or reading it failed. One row per folder, with a reason a user can act on.
WITH bad AS (
    SELECT f.source, f.path,
           CASE WHEN f.status = 'ok' THEN 'every line rejected'
                WHEN f.status = 'unrecognised' THEN 'not a format goodput reads'
                ELSE 'could not be read' END AS problem,
           CASE WHEN f.status = 'ok'
                THEN (SELECT arg_max(reason, n) FROM (SELECT reason, count(*) AS n FROM rejects r
                                                      WHERE r.file = f.path GROUP BY reason))
                ELSE f.message END AS detail
    FROM ingested_files f
    WHERE f.source IS NOT NULL
      AND (f.status IN ('unrecognised', 'error') OR (f.status = 'ok' AND f.row_lines = 0 AND f.rejects > 0))
)
SELECT source,
       count(*) || ' file(s) gave nothing: ' || string_agg(DISTINCT problem, ', ' ORDER BY problem)
           || '; e.g. ' || min(path) || ': ' || coalesce(arg_min(detail, path), 'no reason recorded') AS reason,
       count(*) AS files
FROM bad GROUP BY source ORDER BY source
