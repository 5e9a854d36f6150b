-- The run summary's line on operator texts no reason rule understood: the most frequent first, and how many.
SELECT text, events, count(*) OVER () AS texts, sum(events) OVER () AS all_events
FROM unclassified_reasons ORDER BY events DESC, text LIMIT $n
