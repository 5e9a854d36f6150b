-- The first record of any source (source_spans): a repeat-offender window never reaches before it.
SELECT min(first_time) FROM source_spans
