-- Sources that had rows on at least $min_days of the 7 days before $day; with
-- today's rows and the 7-day median, for the missing-source and drop checks.
WITH history AS (
    SELECT source, count(*) FILTER (WHERE rows > 0) AS days_with_rows, median(rows) AS median_rows
    FROM daily_source_volume WHERE day >= $day::DATE - 7 AND day < $day::DATE GROUP BY source
), today AS (
    SELECT source, rows FROM daily_source_volume WHERE day = $day::DATE
)
SELECT h.source, coalesce(t.rows, 0) AS rows, h.median_rows, h.days_with_rows
FROM history h LEFT JOIN today t USING (source)
WHERE h.days_with_rows >= $min_days
ORDER BY h.source
