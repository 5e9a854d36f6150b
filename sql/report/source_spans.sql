-- Each source's first and last day of data, for the report's note when they end on different days.
SELECT source, first_time::DATE AS first_day, last_time::DATE AS last_day FROM source_spans ORDER BY last_time DESC, source
