-- The first day any source has data on (source_spans): where the daily partitions start.
SELECT min(first_time)::DATE FROM source_spans
