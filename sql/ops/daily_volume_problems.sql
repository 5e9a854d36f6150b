-- Sources that had rows on at least $min_days of the 7 days before the judged day; with
-- their rows on it and the 7-day median, for the missing-source and drop checks.
-- The judged day is $day, unless $day is the partial end of the data: the latest row of any
-- source falls on it more than an hour before it ends (a one-shot run's last day, a log cut
-- mid-day). Its remaining files cannot be in yet, so the day before, the last complete day,
-- is judged instead; $day itself is judged by a later run, once data past it has arrived.
-- A day with no rows at all is never partial: it is judged, and a missing source blocks.
WITH data_end AS (
    SELECT max(t) AS t FROM (
        SELECT max(end_time) AS t FROM jobs UNION ALL SELECT max(event_time) FROM node_events
        UNION ALL SELECT max(run_time) FROM benchmark_results UNION ALL SELECT max(time) FROM telemetry)
), judged AS (
    SELECT CASE WHEN t >= $day::DATE AND t < $day::DATE + INTERVAL 23 HOUR THEN $day::DATE - 1
                ELSE $day::DATE END AS day
    FROM data_end
), history AS (
    SELECT source, count(*) FILTER (WHERE rows > 0) AS days_with_rows, median(rows) AS median_rows
    FROM daily_source_volume, judged j
    WHERE daily_source_volume.day >= j.day - 7 AND daily_source_volume.day < j.day GROUP BY source
), today AS (
    SELECT source, rows FROM daily_source_volume, judged j WHERE daily_source_volume.day = j.day
)
SELECT h.source, coalesce(t.rows, 0) AS rows, h.median_rows, h.days_with_rows, (SELECT day FROM judged) AS judged_day
FROM history h LEFT JOIN today t USING (source)
WHERE h.days_with_rows >= $min_days
ORDER BY h.source
