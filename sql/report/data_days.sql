-- The first and last day any source has data on (source_spans): the days a source may cover in part.
SELECT min(first_time)::DATE AS first_day, max(last_time)::DATE AS last_day FROM source_spans
